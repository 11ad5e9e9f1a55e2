/**
 * A manifest commits a group of data objects (a step's shards, a checkpoint, a rollout shard):
 * it lists each object's key, byte size and sha256, and is written LAST, with putIfAbsent. Until it
 * exists the objects are invisible to readers; once it exists they are immutable and verifiable.
 * `attempt` is the writer's random id: objects of different attempts never share a key, so a losing
 * or crashed writer can never overwrite bytes a committed manifest vouches for.
 */
import { z } from "zod";
import { sha256Hex } from "./checksum.ts";
import type { ObjectStore } from "./object-store.ts";

export const MANIFEST_VERSION = 1;

export const ManifestEntrySchema = z.object({
  /** Key relative to the manifest's folder. */
  key: z.string().min(1),
  size: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type ManifestEntry = z.infer<typeof ManifestEntrySchema>;

export const ManifestSchema = z.object({
  manifestVersion: z.literal(MANIFEST_VERSION),
  kind: z.enum(["step", "checkpoint", "rollout"]),
  attempt: z.string().min(1),
  committedAt: z.string(),
  objects: z.array(ManifestEntrySchema),
  /** Free-form facts about the commit (step number, policy version, consumed rollout shards…). */
  meta: z.record(z.string(), z.unknown()).default({}),
});
export type Manifest = z.infer<typeof ManifestSchema>;

export class IntegrityError extends Error {
  constructor(
    readonly objectKey: string,
    detail: string,
  ) {
    super(`${objectKey}: ${detail}`);
    this.name = "IntegrityError";
  }
}

export async function manifestEntry(key: string, bytes: Uint8Array): Promise<ManifestEntry> {
  return { key, size: bytes.byteLength, sha256: await sha256Hex(bytes) };
}

export function parseManifest(bytes: Uint8Array, where: string): Manifest {
  return decodeJson(bytes, where, "manifest", ManifestSchema);
}

/**
 * Decodes a small JSON object of the store (a manifest, an alias, a claim) and validates it; an
 * IntegrityError names the object and, for a wrong shape, the first bad field.
 */
export function decodeJson<T extends z.ZodType>(
  bytes: Uint8Array,
  where: string,
  what: string,
  schema: T,
): z.infer<T> {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new IntegrityError(where, `${what} is not valid JSON (truncated or corrupted?)`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new IntegrityError(where, `${what}: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  return parsed.data;
}

export function encodeManifest(manifest: Manifest): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(manifest, null, 1)}\n`);
}

/** Reads one object a manifest lists and checks its size and sha256, naming the object on mismatch. */
export async function readVerified(
  store: ObjectStore,
  folder: string,
  entry: ManifestEntry,
): Promise<Uint8Array> {
  const fullKey = `${folder}/${entry.key}`;
  return verifyBytes(fullKey, await store.get(fullKey), entry);
}

/**
 * Checks an object's bytes against what its manifest recorded (size, then sha256) and returns them;
 * an IntegrityError names the object. Every manifest format of the store goes through here: runs'
 * manifests and the team registry's.
 */
export async function verifyBytes(
  key: string,
  bytes: Uint8Array,
  expected: { readonly size: number; readonly sha256: string },
): Promise<Uint8Array> {
  if (bytes.byteLength !== expected.size) {
    throw new IntegrityError(
      key,
      `size ${bytes.byteLength} bytes, manifest says ${expected.size} (truncated?)`,
    );
  }
  const actual = await sha256Hex(bytes);
  if (actual !== expected.sha256) {
    throw new IntegrityError(key, `sha256 ${actual}, manifest says ${expected.sha256} (corrupted)`);
  }
  return bytes;
}

/** A random id for one writer attempt (12 hex digits). */
export function newAttemptId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The manifest an attempt writes for its objects, stamped now with the version this code writes. */
export function newManifest(
  kind: Manifest["kind"],
  attempt: string,
  objects: ManifestEntry[],
  meta: Record<string, unknown>,
): Manifest {
  return {
    manifestVersion: MANIFEST_VERSION,
    kind,
    attempt,
    committedAt: new Date().toISOString(),
    objects,
    meta,
  };
}
