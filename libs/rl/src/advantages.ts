/**
 * Group-relative advantages. A group is a set of returns for comparable samples (same task, same
 * agent, same turn, same state where the strategy guarantees it); each sample's advantage is its
 * return minus a baseline computed from its group, optionally divided by the group's std.
 *
 *   mean  (GRPO default)  A_i = R_i − mean(R)
 *   rloo  (leave-one-out) A_i = R_i − mean_{j≠i} R_j = G/(G−1) · (R_i − mean(R))
 *   max                   A_i = R_i − max(R)          (≤ 0: only the best is not pushed down)
 *   raw   (no baseline)   A_i = R_i                   (REINFORCE)
 *   std-normalised:       A_i ← A_i / (std(R) + ε)    (population std, as in GRPO)
 *
 * With the `mean` baseline the advantages of a group sum to zero; with `rloo` too.
 */

export type Baseline = "mean" | "rloo" | "max" | "raw";

export interface AdvantageConfig {
  readonly baseline: Baseline;
  /** Divide by the group's standard deviation (+ε). GRPO: true; Dr. GRPO: false. */
  readonly normalizeStd: boolean;
  /** ε in the std normalisation. */
  readonly eps: number;
}

export const defaultAdvantageConfig: AdvantageConfig = { baseline: "mean", normalizeStd: true, eps: 1e-6 };

export function mean(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error("mean of an empty list");
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Population standard deviation. */
export function std(xs: readonly number[]): number {
  const m = mean(xs);
  let s = 0;
  for (const x of xs) s += (x - m) * (x - m);
  return Math.sqrt(s / xs.length);
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
  const m = mean(returns);
  let centred: number[];
  switch (config.baseline) {
    case "mean":
      centred = returns.map((r) => r - m);
      break;
    case "rloo":
      // A group of one has no "others": its advantage is 0.
      centred = n === 1 ? [0] : returns.map((r) => (r - m) * (n / (n - 1)));
      break;
    case "max": {
      const best = Math.max(...returns);
      centred = returns.map((r) => r - best);
      break;
    }
    case "raw":
      centred = returns.slice();
      break;
  }
  if (!config.normalizeStd) return centred;
  const s = std(returns);
  return centred.map((a) => a / (s + config.eps));
}
