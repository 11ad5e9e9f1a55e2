/**
 * Seeded randomness. Every random choice in Troupe (sampling a token, breaking a tie, generating
 * a puzzle) draws from an `Rng` whose seed is derived from the run seed and the *path* of the
 * choice (step, task, branch, agent, candidate) with `deriveSeed`. A choice therefore never
 * depends on the order in which other choices were made, so batching and concurrency cannot
 * change a rollout: the same seed gives the same tree, byte for byte.
 */
import { uniformFloat64 } from "pure-rand/distribution/uniformFloat64";
import { uniformInt } from "pure-rand/distribution/uniformInt";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";

/** A part of a seed path: numbers and strings both hash stably. */
export type SeedPart = number | string;

/**
 * Mixes a base seed with a path into a 32-bit unsigned seed.
 * FNV-1a over the parts' text, then the murmur3 finaliser for avalanche. Written here because it
 * must be identical in every runtime (Node, Workers, the browser) and is ten lines.
 */
export function deriveSeed(base: number, ...path: readonly SeedPart[]): number {
  let h = 0x811c9dc5 ^ (base >>> 0);
  const text = path.map((p) => (typeof p === "number" ? `n${p}` : `s${p}`)).join("\u0000");
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A small seeded random source over pure-rand's xoroshiro128+. Not for cryptography. */
export class Rng {
  private readonly generator;

  constructor(readonly seed: number) {
    if (!Number.isInteger(seed)) throw new Error(`Rng seed must be an integer, got ${seed}`);
    // xoroshiro128+ seeded with a small integer starts from a low-entropy state: its first draws
    // are close to 1 for seeds like 1 or 42. Mixing the seed first (and skipping a few outputs)
    // makes nearby seeds give unrelated streams from the first draw.
    this.generator = xoroshiro128plus(deriveSeed(seed) | 0);
    for (let i = 0; i < 4; i++) this.generator.next();
  }

  /** Uniform float in [0, 1). */
  float(): number {
    return uniformFloat64(this.generator);
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new Error(`Rng.int needs a positive integer bound, got ${n}`);
    return uniformInt(this.generator, 0, n - 1);
  }

  /** Uniform integer in [lo, hi] (both included). */
  intBetween(lo: number, hi: number): number {
    return uniformInt(this.generator, lo, hi);
  }

  /** One element, uniformly. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("Rng.pick on an empty list");
    return items[this.int(items.length)]!;
  }

  /** An index drawn with probability proportional to `weights` (non-negative, not all zero). */
  weightedIndex(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) {
      if (!(w >= 0) || !Number.isFinite(w)) throw new Error(`Rng.weightedIndex: bad weight ${w}`);
      total += w;
    }
    if (total <= 0) throw new Error("Rng.weightedIndex: all weights are zero");
    let u = this.float() * total;
    for (let i = 0; i < weights.length; i++) {
      u -= weights[i]!;
      if (u < 0) return i;
    }
    // Floating-point leftovers land on the last non-zero weight.
    for (let i = weights.length - 1; i >= 0; i--) if (weights[i]! > 0) return i;
    return weights.length - 1;
  }

  /** A shuffled copy (Fisher–Yates). */
  shuffled<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }
}
