/**
 * Deterministic train/test splits by a canonical hash of the problem itself (not its position in
 * the file), so reordering or appending rows never moves a problem to the other split, and a
 * problem that appears twice lands in the same split both times.
 *
 *   u(problem) = first 32 bits of sha256(canonicalJson({salt, key})) / 2^32  ∈ [0, 1)
 *   split      = test if u < testFraction, else train
 */
import { stableHash } from "@troupe/core";

/** The hash that identifies a problem: whitespace-collapsed, lower-cased text. */
export function problemHash(text: string): string {
  return stableHash(text.replace(/\s+/g, " ").trim().toLowerCase());
}

/** u ∈ [0, 1) from a key and a salt. */
export function hashUnit(key: string, salt: string): number {
  return Number.parseInt(stableHash({ salt, key }).slice(0, 8), 16) / 2 ** 32;
}

export function splitByHash<T>(
  items: readonly T[],
  key: (item: T) => string,
  testFraction: number,
  salt: string,
): { train: T[]; test: T[] } {
  if (!(testFraction >= 0 && testFraction <= 1))
    throw new Error(`testFraction must be in [0, 1], got ${testFraction}`);
  const train: T[] = [];
  const test: T[] = [];
  for (const item of items) (hashUnit(problemHash(key(item)), salt) < testFraction ? test : train).push(item);
  return { train, test };
}
