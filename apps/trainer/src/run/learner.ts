/**
 * The learner: samples → per-policy training batches → one scoring pass → `epochs` engine updates
 * per policy.
 *
 * Each sample carries its advantage (estimated in its group by train()'s advantage stage) and the
 * log-probs its sampler reported. Those are log q(token), q the *sampling* distribution — after temperature,
 * top-k and top-p — while the loss differentiates log π(token), π the plain softmax over the
 * tokenizer's ids. Using log q as the PPO "old" log-probs makes the first epoch's ratio
 *   r = π(token) / q(token) ≠ 1
 * whenever sampling is not plain T = 1 (measured 0.60–1.49 at T = 0.7, a constant ≈ 0.90 at
 * top-p 0.9), so PPO clips gradient that is on-policy in every other sense. As verl does
 * (`compute_log_prob` before `update_actor`), the learner therefore scores every batch with the
 * weights it is about to update and uses those log-probs as ℓ_old:
 *   ℓ_old = log π_θ(token) (θ = the weights before this step's first epoch)  ⇒  epoch 1: r = 1,
 * and later epochs measure how far the update moved π, which is what the clip is there to bound.
 * The sampler's log q stays in the Sample (provenance), untouched.
 */
import type { PolicyId, Sample } from "@troupe/core";
import type {
  Engine,
  OptimizerConfig,
  PolicyLossConfig,
  TokenSequence,
  TrainMetrics,
  TrainSequence,
  TrainStepConfig,
} from "@troupe/engine";

/** A training sequence before the learner's scoring pass fills in its log-probs. */
export interface LearnerSequence extends TokenSequence {
  readonly advantage: number;
}

/** Training sequences of each policy, in sample order. Samples with no completion token are skipped. */
export function batchesByPolicy(samples: readonly Sample[]): Map<PolicyId, LearnerSequence[]> {
  const out = new Map<PolicyId, LearnerSequence[]>();
  for (const s of samples) {
    if (s.completionTokenIds.length === 0) continue;
    const sequence: LearnerSequence = {
      promptTokenIds: s.promptTokenIds,
      completionTokenIds: s.completionTokenIds,
      advantage: s.advantage,
    };
    const list = out.get(s.provenance.policyId);
    if (list) list.push(sequence);
    else out.set(s.provenance.policyId, [sequence]);
  }
  return out;
}

/** What scores the reference policy of the KL term: an engine holding the reference weights under the same policy ids. */
export type ReferenceScorer = Pick<Engine, "logprobs">;

export interface LearnerConfig {
  readonly loss: PolicyLossConfig;
  readonly optimizer: OptimizerConfig;
  readonly microBatchSize: number;
  /** Padded tokens per micro-batch (TrainStepConfig.maxTokensPerMicroBatch); unbounded when absent. */
  readonly maxTokensPerMicroBatch?: number | undefined;
  /** Optimizer updates over the same samples (PPO epochs); 1 = one on-policy update. */
  readonly epochs?: number;
  /**
   * The reference policy of the KL penalty (loss.klCoef > 0), e.g. the warm start: ℓ_ref is
   * scored by it once per step, under the same policy id. Required when loss.klCoef > 0.
   */
  readonly reference?: ReferenceScorer;
}

/**
 * Per policy that has samples: one scoring pass (ℓ_old, see above; ℓ_ref too when the loss has a
 * KL term), then `epochs` updates on the same batch with ℓ_old fixed, so the clipped ratio bounds
 * how far later epochs move. Sequences with zero advantage carry no policy-gradient but still
 * count in token-mean normalisation, exactly as in the reference loss. A policy whose advantages
 * are all 0 is not updated (no scoring pass, no optimizer step). Returns the last epoch's metrics
 * (its clip fraction and approx-KL show how far the epochs moved the policy; with one epoch both
 * are 0 up to the engine's float rounding).
 */
export async function learnerStep(
  engine: Engine,
  samples: readonly Sample[],
  config: LearnerConfig,
): Promise<Map<PolicyId, TrainMetrics>> {
  const withKl = config.loss.klCoef !== 0;
  if (withKl && config.reference === undefined) {
    throw new Error(
      `learner: loss.klCoef is ${config.loss.klCoef} but no reference policy was given to score ℓ_ref`,
    );
  }
  const metrics = new Map<PolicyId, TrainMetrics>();
  const stepConfig: TrainStepConfig = {
    loss: config.loss,
    optimizer: config.optimizer,
    microBatchSize: config.microBatchSize,
    maxTokensPerMicroBatch: config.maxTokensPerMicroBatch,
  };
  for (const [policyId, sequences] of batchesByPolicy(samples)) {
    if (sequences.every((s) => s.advantage === 0)) continue; // no signal: skip the update (and the optimizer step)
    const old = await engine.logprobs(policyId, sequences);
    const ref = withKl ? await config.reference!.logprobs(policyId, sequences) : undefined;
    const batch: TrainSequence[] = sequences.map((s, i) => ({
      ...s,
      oldLogprobs: old[i]!,
      ...(ref ? { refLogprobs: ref[i]! } : {}),
    }));
    for (let epoch = 0; epoch < (config.epochs ?? 1); epoch++)
      metrics.set(policyId, await engine.trainStep(policyId, batch, stepConfig));
  }
  return metrics;
}
