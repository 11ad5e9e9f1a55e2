/**
 * The learner: samples → per-policy training batches → one engine update per policy.
 * Each sample already carries its advantage (computed by the strategy inside its group) and the
 * log-probs of the policy that sampled it (the PPO "old" log-probs).
 */
import type { PolicyId, Sample } from "@troupe/core";
import type { Engine, OptimizerConfig, TrainMetrics, TrainSequence, TrainStepConfig } from "@troupe/engine";
import type { PolicyLossConfig } from "@troupe/rl";

/** Training sequences of each policy, in sample order. Samples with no completion token are skipped. */
export function batchesByPolicy(samples: readonly Sample[]): Map<PolicyId, TrainSequence[]> {
  const out = new Map<PolicyId, TrainSequence[]>();
  for (const s of samples) {
    if (s.completionTokenIds.length === 0) continue;
    const sequence: TrainSequence = {
      promptTokenIds: s.promptTokenIds,
      completionTokenIds: s.completionTokenIds,
      oldLogprobs: s.samplingLogprobs,
      advantage: s.advantage,
    };
    const list = out.get(s.provenance.policyId);
    if (list) list.push(sequence);
    else out.set(s.provenance.policyId, [sequence]);
  }
  return out;
}

export interface LearnerConfig {
  readonly loss: PolicyLossConfig;
  readonly optimizer: OptimizerConfig;
  readonly microBatchSize: number;
  /** Optimizer updates over the same samples (PPO epochs); 1 = one on-policy update. */
  readonly epochs?: number;
}

/**
 * `epochs` updates per policy that has samples (PPO: the same batch, old log-probs fixed to the
 * sampling policy's, so the clipped ratio bounds how far later epochs move). Sequences with zero
 * advantage carry no gradient under the PPO loss but still count in token-mean normalisation,
 * exactly as in the reference loss. Returns the last epoch's metrics (its clip fraction and
 * approx-KL show how far the epochs moved the policy).
 */
export async function learnerStep(
  engine: Engine,
  samples: readonly Sample[],
  config: LearnerConfig,
): Promise<Map<PolicyId, TrainMetrics>> {
  const metrics = new Map<PolicyId, TrainMetrics>();
  const stepConfig: TrainStepConfig = {
    loss: config.loss,
    optimizer: config.optimizer,
    microBatchSize: config.microBatchSize,
  };
  for (const [policyId, batch] of batchesByPolicy(samples)) {
    if (batch.every((s) => s.advantage === 0)) continue; // no signal: skip the update (and the optimizer step)
    for (let epoch = 0; epoch < (config.epochs ?? 1); epoch++)
      metrics.set(policyId, await engine.trainStep(policyId, batch, stepConfig));
  }
  return metrics;
}
