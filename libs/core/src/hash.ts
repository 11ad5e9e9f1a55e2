/**
 * Canonical hashing: a value's identity independent of key order. Used to check that train and
 * test splits never share an instance, that tree branches never mutate each other's state, and
 * that two runs with the same seed produce the same bytes.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

/** JSON with object keys sorted at every level; rejects values JSON cannot carry faithfully. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalize(value, "$"));
}

function canonicalize(value: unknown, path: string): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`canonicalJson: non-finite number at ${path}`);
    return value;
  }
  if (Array.isArray(value)) return value.map((v, i) => canonicalize(v, `${path}[${i}]`));
  if (ArrayBuffer.isView(value)) return Array.from(value as unknown as ArrayLike<number>);
  if (typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value as object).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = canonicalize(v, `${path}.${key}`);
    }
    return out;
  }
  throw new Error(`canonicalJson: cannot encode ${typeof value} at ${path}`);
}

/** Hex sha256 of the canonical JSON of a value. */
export function stableHash(value: unknown): string {
  return bytesToHex(sha256(utf8ToBytes(canonicalJson(value))));
}

/** Hex sha256 of raw bytes or text. */
export function sha256Hex(data: Uint8Array | string): string {
  return bytesToHex(sha256(typeof data === "string" ? utf8ToBytes(data) : data));
}

/** Freezes a value and everything reachable from it, so an accidental mutation throws (in strict mode). */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  if (ArrayBuffer.isView(value)) return value; // typed arrays cannot be frozen; environments must not share them
  Object.freeze(value);
  for (const key of Object.keys(value as object)) deepFreeze((value as Record<string, unknown>)[key]);
  return value;
}
