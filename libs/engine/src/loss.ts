/**
 * Reference policy-gradient loss, over plain arrays: the specification the engines implement on
 * tensors, and the oracle their tests compare against. Written for clarity, not speed.
 *
 * Per token t of sequence b, with log-probs under the current policy ℓ = log π_θ, under the
 * policy that sampled the token ℓ_old, advantage A (one per sequence, or per token):
 *
 *   ratio     r   = exp(ℓ − ℓ_old)
 *   PPO-clip  L¹  = −A · r
 *             L²  = −A · clip(r, 1 − ε_low, 1 + ε_high)
 *             L^pg = max(L¹, L²)
 *   dual-clip (Ye et al. 2020), only where A < 0:   L^pg = min(L^pg, −A · c)      (c > 1)
 *   KL to a reference policy, k3 estimator (Schulman 2020), δ = ℓ_ref − ℓ:
 *             k3  = exp(δ) − δ − 1                           (≥ 0, unbiased for KL(π_θ‖π_ref))
 *   per-token loss  L = L^pg + β_KL · k3 − β_H · H − β_NLL · ℓ
 *                                      (H = entropy of π_θ at that position; β_NLL: a supervised term)
 *
 * Aggregation over the mask M (1 for completion tokens, 0 for prompt and padding):
 *   token-mean     Σ_{b,t} M·L / Σ_{b,t} M                   (every token weighs the same; the default)
 *   sequence-mean  mean_b ( Σ_t M·L / Σ_t M )                (every sequence weighs the same)
 *   sequence-sum   mean_b ( Σ_t M·L )                        (Dr. GRPO-style: no length normalisation)
 * Sequences with no masked-in token are left out of the sequence aggregations.
 */

export type LossAggregation = "token-mean" | "sequence-mean" | "sequence-sum";

export interface PolicyLossConfig {
  /** ε_low: lower clip range, ratio ≥ 1 − ε_low. PPO default 0.2. */
  readonly clipLow: number;
  /** ε_high: upper clip range, ratio ≤ 1 + ε_high. PPO default 0.2 (DAPO's clip-higher uses 0.28). */
  readonly clipHigh: number;
  /** c for dual-clip on negative advantages; undefined disables it. Ye et al. use 3. */
  readonly dualClip?: number | undefined;
  /** β_KL: weight of the k3 KL penalty to the reference policy; 0 disables it. */
  readonly klCoef: number;
  /** β_H: weight of the entropy bonus; 0 disables it. */
  readonly entropyCoef: number;
  /**
   * β_NLL: weight of a supervised term −ℓ (the negative log-likelihood of the sequence's tokens);
   * 0 (the default when absent) disables it. The warm start trains with A = 0 and β_NLL = 1: one
   * pass, no separate scoring of ℓ_old.
   */
  readonly nllCoef?: number | undefined;
  readonly aggregation: LossAggregation;
}

export const defaultPolicyLossConfig: PolicyLossConfig = {
  clipLow: 0.2,
  clipHigh: 0.2,
  dualClip: undefined,
  klCoef: 0,
  entropyCoef: 0,
  aggregation: "token-mean",
};

/** One sequence's per-token numbers (all arrays the same length). */
export interface LossSequence {
  readonly logprobs: readonly number[];
  readonly oldLogprobs: readonly number[];
  /** One advantage for the whole sequence, or one per token. */
  readonly advantage: number | readonly number[];
  readonly mask: readonly number[];
  readonly refLogprobs?: readonly number[];
  readonly entropies?: readonly number[];
}

/** What a loss over a batch reports: the reference's result and every engine's train step. */
export interface LossMetrics {
  /** The aggregated loss that is minimised. */
  readonly loss: number;
  /** Aggregated PPO term alone. */
  readonly pgLoss: number;
  /** Aggregated k3 KL to the reference (0 without reference log-probs). */
  readonly kl: number;
  /** Aggregated entropy (0 without entropies). */
  readonly entropy: number;
  /** Share of masked tokens where clipping changed the PPO term (L² > L¹, or the dual clip bound). */
  readonly clipFraction: number;
  /** Token-mean of ℓ_old − ℓ: first-order estimate of KL(π_old‖π_θ). */
  readonly approxKl: number;
  /** Masked token count. */
  readonly tokens: number;
}

/**
 * The sums `LossMetrics` are read from, over a batch's masked-in tokens (or its micro-batches):
 * the aggregated terms, the clipped tokens and Σ ℓ_old − ℓ.
 */
export interface LossSums {
  loss: number;
  pgLoss: number;
  kl: number;
  entropy: number;
  clipped: number;
  oldMinusNew: number;
}

export const emptyLossSums = (): LossSums => ({
  loss: 0,
  pgLoss: 0,
  kl: 0,
  entropy: 0,
  clipped: 0,
  oldMinusNew: 0,
});

/** Adds a part's sums (a micro-batch's) into `total`. */
export function addLossSums(total: LossSums, part: Readonly<LossSums>): void {
  total.loss += part.loss;
  total.pgLoss += part.pgLoss;
  total.kl += part.kl;
  total.entropy += part.entropy;
  total.clipped += part.clipped;
  total.oldMinusNew += part.oldMinusNew;
}

/** The metrics of sums over `tokens` masked-in tokens. */
export function lossMetrics(sums: Readonly<LossSums>, tokens: number): LossMetrics {
  return {
    loss: sums.loss,
    pgLoss: sums.pgLoss,
    kl: sums.kl,
    entropy: sums.entropy,
    clipFraction: sums.clipped / tokens,
    approxKl: sums.oldMinusNew / tokens,
    tokens,
  };
}

export interface PolicyLossResult extends LossMetrics {
  /** ∂loss/∂ℓ for every token (0 where masked out): what an engine's backward pass must reproduce. */
  readonly gradLogprobs: number[][];
}

export interface TokenTerms {
  readonly loss: number;
  readonly pg: number;
  readonly kl: number;
  readonly clipped: boolean;
  /** ∂(per-token loss)/∂ℓ, the entropy term excluded (it depends on the whole distribution). */
  readonly grad: number;
}

/** The per-token loss and its derivative with respect to the current log-prob. */
export function tokenLoss(
  logprob: number,
  oldLogprob: number,
  advantage: number,
  config: PolicyLossConfig,
  refLogprob?: number,
  entropy?: number,
): TokenTerms {
  const ratio = Math.exp(logprob - oldLogprob);
  const clippedRatio = Math.min(Math.max(ratio, 1 - config.clipLow), 1 + config.clipHigh);
  const unclippedLoss = -advantage * ratio;
  const clippedLoss = -advantage * clippedRatio;
  let pg: number;
  let grad: number; // ∂pg/∂ℓ = ∂pg/∂r · r
  let clipped: boolean;
  if (clippedLoss > unclippedLoss) {
    // The clipped branch is active and flat in ℓ.
    pg = clippedLoss;
    grad = 0;
    clipped = true;
  } else {
    pg = unclippedLoss;
    grad = -advantage * ratio;
    clipped = false;
  }
  if (config.dualClip !== undefined && advantage < 0) {
    const bound = -advantage * config.dualClip;
    if (bound < pg) {
      pg = bound;
      grad = 0;
      clipped = true;
    }
  }
  let kl = 0;
  if (config.klCoef !== 0 && refLogprob !== undefined) {
    const delta = refLogprob - logprob;
    kl = Math.exp(delta) - delta - 1;
    grad += config.klCoef * (1 - Math.exp(delta)); // ∂k3/∂ℓ = −e^δ + 1
  }
  const entropyTerm = config.entropyCoef !== 0 && entropy !== undefined ? config.entropyCoef * entropy : 0;
  const nllCoef = config.nllCoef ?? 0;
  grad -= nllCoef; // ∂(−β_NLL·ℓ)/∂ℓ
  return { loss: pg + config.klCoef * kl - entropyTerm - nllCoef * logprob, pg, kl, clipped, grad };
}

/** Aggregation weight of each token: loss = Σ_{b,t} w_{b,t} · L_{b,t}. */
export function aggregationWeights(
  masks: readonly (readonly number[])[],
  aggregation: LossAggregation,
): number[][] {
  const totalTokens = masks.reduce((n, m) => n + m.reduce((a, b) => a + b, 0), 0);
  const liveSequences = masks.filter((m) => m.some((x) => x !== 0)).length;
  return masks.map((mask) => {
    const seqTokens = mask.reduce((a, b) => a + b, 0);
    return mask.map((m) => {
      if (m === 0) return 0;
      if (aggregation === "token-mean") return m / totalTokens;
      if (aggregation === "sequence-mean") return m / seqTokens / liveSequences;
      return m / liveSequences; // sequence-sum
    });
  });
}

export function policyLoss(
  batch: readonly LossSequence[],
  config: PolicyLossConfig = defaultPolicyLossConfig,
): PolicyLossResult {
  for (const [b, seq] of batch.entries()) checkSequence(seq, b);
  const weights = aggregationWeights(
    batch.map((s) => s.mask),
    config.aggregation,
  );
  const sums = emptyLossSums();
  let tokens = 0;
  const gradLogprobs = batch.map((seq, b) =>
    seq.logprobs.map((logprob, t) => {
      const w = weights[b]![t]!;
      if (seq.mask[t] === 0) return 0;
      const advantage = typeof seq.advantage === "number" ? seq.advantage : seq.advantage[t]!;
      const terms = tokenLoss(
        logprob,
        seq.oldLogprobs[t]!,
        advantage,
        config,
        seq.refLogprobs?.[t],
        seq.entropies?.[t],
      );
      sums.loss += w * terms.loss;
      sums.pgLoss += w * terms.pg;
      sums.kl += w * terms.kl;
      sums.entropy += w * (seq.entropies?.[t] ?? 0);
      tokens += 1;
      if (terms.clipped) sums.clipped += 1;
      sums.oldMinusNew += seq.oldLogprobs[t]! - logprob;
      return w * terms.grad;
    }),
  );
  if (tokens === 0) throw new Error("policyLoss: the batch has no masked-in token");
  return { ...lossMetrics(sums, tokens), gradLogprobs };
}

function checkSequence(seq: LossSequence, b: number): void {
  const n = seq.logprobs.length;
  const check = (name: string, arr: readonly number[] | undefined) => {
    if (arr !== undefined && arr.length !== n) {
      throw new Error(`policyLoss: sequence ${b}: ${name} has ${arr.length} entries, logprobs has ${n}`);
    }
  };
  check("oldLogprobs", seq.oldLogprobs);
  check("mask", seq.mask);
  check("refLogprobs", seq.refLogprobs);
  check("entropies", seq.entropies);
  if (typeof seq.advantage !== "number") check("advantage", seq.advantage);
  for (let t = 0; t < n; t++) {
    if (!Number.isFinite(seq.logprobs[t]!))
      throw new Error(`policyLoss: sequence ${b}: logprobs[${t}] is ${seq.logprobs[t]}`);
  }
}
