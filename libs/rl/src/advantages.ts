/**
 * Group-relative advantages. A group is a set of returns for comparable samples (same task, same
 * agent, same turn, same state where the strategy guarantees it); each sample's advantage is its
 * return minus a baseline computed from its group, optionally divided by the group's std.
 *
 *   mean  (GRPO default)  A_i = R_i − mean(R)
 *   rloo  (leave-one-out) A_i = R_i − mean_{j≠i} R_j = G/(G−1) · (R_i − mean(R))
 *   max                   A_i = R_i − max(R)          (≤ 0: only the best is not pushed down)
 *   raw   (no baseline)   A_i = R_i                   (REINFORCE)
 *   std-normalised:       A_i ← A_i / (σ(R) + ε),  ε > 0
 *     σ = population std  √(Σ(R_j − R̄)² / G)      (`std: "population"`, the default)
 *     σ = sample std      √(Σ(R_j − R̄)² / (G−1))  (`std: "sample"`: torch.std, as verl and
 *                                                   PettingLLMs normalise GRPO advantages)
 *   A group whose returns are all equal gets A_i = 0 when std-normalised, whatever the baseline.
 *
 * Why the constant-group rule: σ = 0 there, so the division leaves A_i / ε. That is 0 for the
 * centred baselines (mean, rloo, max: A_i = 0 already), but `raw` is not centred and gave R_i / ε
 * (R = 0.5, ε = 1e-6 → 500000), and ε = 0 gave 0/0 = NaN for every baseline. Normalising by the
 * group's spread says "only differences within the group matter"; a group without differences
 * therefore carries no signal. Equality is tested exactly, not as σ = 0: the mean of equal
 * floating-point returns can differ from them in the last bit, leaving σ ≈ 1e-17 instead of 0.
 *
 * With the `mean` baseline the advantages of a group sum to zero; with `rloo` too.
 *
 * Baselines are registered by name (`registerBaseline`), so a strategy's config names one
 * (`advantage.baseline`) and a new one is a function here, not a new code path in a strategy.
 * Which samples form a group, and when advantages are computed, is estimators.ts.
 */
import { mean } from "@troupe/core";
import { z } from "zod";

/** The centred advantages A_i = R_i − b of one group's returns R (n ≥ 1, all finite), in order. */
export type BaselineFn = (returns: readonly number[], mean: number) => number[];

const baselines = new Map<string, BaselineFn>();

/** Makes `name` usable as `advantage.baseline`. */
export function registerBaseline(name: string, fn: BaselineFn): void {
  if (baselines.has(name)) throw new Error(`baseline "${name}" is already registered`);
  baselines.set(name, fn);
}

/** Names of the registered baselines, in registration order. */
export function baselineNames(): string[] {
  return [...baselines.keys()];
}

// GRPO (Shao et al. 2024): A_i = R_i − mean(R).
registerBaseline("mean", (returns, m) => returns.map((r) => r - m));
// RLOO (Ahmadian et al. 2024): A_i = R_i − mean_{j≠i} R_j = G/(G−1)·(R_i − mean R). A group of
// one has no "others": its advantage is 0.
registerBaseline("rloo", (returns, m) => {
  const n = returns.length;
  return n === 1 ? [0] : returns.map((r) => (r - m) * (n / (n - 1)));
});
// ReMax-like: A_i = R_i − max(R) (≤ 0: only the best is not pushed down).
registerBaseline("max", (returns) => {
  const best = Math.max(...returns);
  return returns.map((r) => r - best);
});
// REINFORCE: no baseline, A_i = R_i.
registerBaseline("raw", (returns) => returns.slice());

/** How a group's returns become advantages, with GRPO's defaults (mean baseline, std-normalised). */
export const AdvantageSchema = z.strictObject({
  /** A registered baseline: mean (GRPO), rloo, max, raw (REINFORCE). */
  baseline: z
    .string()
    .refine((name) => baselines.has(name), {
      error: (issue) => `unknown baseline "${String(issue.input)}" (known: ${baselineNames().join(", ")})`,
    })
    .default("mean"),
  /** Divide by the group's standard deviation (+ε). GRPO: true; Dr. GRPO and CoMLRL's MAGRPO: false. */
  normalizeStd: z.boolean().default(true),
  // (R − b) / (σ + ε): with ε = 0 a group whose spread underflows to 0 gives 0/0 = NaN advantages.
  eps: z
    .number()
    .gt(0, {
      message: "eps must be > 0: it is the ε in (R − baseline) / (std + ε), and ε = 0 divides by zero",
    })
    .default(1e-6),
  /**
   * Which std divides when normalizeStd: population (÷G) when absent, or sample (÷(G−1), verl's
   * torch.std). Absent rather than defaulted: every recorded run config and sweep point hashes its
   * `advantage` section, and "population" is what they all used.
   */
  std: z.enum(["population", "sample"]).optional(),
});
export type AdvantageConfig = z.output<typeof AdvantageSchema>;
export const defaultAdvantageConfig: AdvantageConfig = AdvantageSchema.parse({});

/** Population standard deviation √(Σ(x − x̄)² / n). */
export function std(xs: readonly number[]): number {
  return Math.sqrt(sumOfSquares(xs) / xs.length);
}

/** Sample (unbiased-variance) standard deviation √(Σ(x − x̄)² / (n − 1)), n ≥ 2 (torch.std). */
export function sampleStd(xs: readonly number[]): number {
  if (xs.length < 2) throw new Error(`sample std needs at least 2 values, got ${xs.length}`);
  return Math.sqrt(sumOfSquares(xs) / (xs.length - 1));
}

function sumOfSquares(xs: readonly number[]): number {
  const m = mean(xs);
  let s = 0;
  for (const x of xs) s += (x - m) * (x - m);
  return s;
}

/** Advantages of one group's returns, in the same order. */
export function groupAdvantages(
  returns: readonly number[],
  config: AdvantageConfig = defaultAdvantageConfig,
): number[] {
  const n = returns.length;
  if (n === 0) return [];
  for (const r of returns)
    if (!Number.isFinite(r)) throw new Error(`groupAdvantages: non-finite return ${r}`);
  const baseline = baselines.get(config.baseline);
  if (!baseline) {
    throw new Error(`unknown baseline "${config.baseline}" (known: ${baselineNames().join(", ")})`);
  }
  const centred = baseline(returns, mean(returns));
  if (!config.normalizeStd) return centred;
  // ε > 0 bounds |A_i| ≤ |A_i (centred)| / ε even where σ is 0 for distinct returns (their squared
  // deviations underflow, e.g. [1e-200, 2e-200]); with ε = 0 that was 0/0 = NaN.
  if (!(config.eps > 0))
    throw new Error(`groupAdvantages: eps must be > 0 when normalizeStd is true, got ${config.eps}`);
  // A constant group (this includes a group of one) has no within-group signal: A = 0 (see above).
  if (returns.every((r) => r === returns[0])) return returns.map(() => 0);
  const s = config.std === "sample" ? sampleStd(returns) : std(returns);
  return centred.map((a) => a / (s + config.eps));
}
