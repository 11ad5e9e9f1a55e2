/**
 * The advantage stage: what the controller does between rollouts and the learner, in the verl
 * manner (one place estimates advantages for the whole batch, after the batch is known).
 *
 *   rollouts (strategy)   RolloutSamples: rewards, returns and group keys, no advantage
 *   → group filters       drop whole groups (grouping.ts), now that every group of the step is in
 *   → estimator           per group: A = (R − baseline(R)) [/ (σ(R) + ε)]   (advantages.ts): Samples
 *   → learner
 *
 * Strategies compute returns because only they see the episode or tree the return is defined
 * on (GRPO: the discounted sum over the episode's later steps; MAGRPO: R = r + γ·mean of the
 * children's returns, credited per completion; AT-GRPO: the step's own reward). Everything after
 * needs only the samples, so it also works on samples that come back from rollout workers
 * through the store, after the learner's staleness check, and a filter sees every group of the
 * step instead of one worker's share.
 */
import type { RolloutSample, Sample } from "@troupe/core";
import type { z } from "zod";
import { AdvantageSchema, groupAdvantages } from "./advantages.ts";
import { type FilterReport, filterGroups, GroupFilterSchema, groupSamples } from "./grouping.ts";

/**
 * The advantage stage's settings, the same for every strategy (a recipe's `advantage` section):
 * the estimator (baseline, std normalisation; GRPO's defaults) and the group filters.
 */
export const EstimationConfigSchema = AdvantageSchema.extend({
  /** Absent: every group is kept. */
  filters: GroupFilterSchema.optional(),
});
export type EstimationConfig = z.output<typeof EstimationConfigSchema>;
export const defaultEstimationConfig: EstimationConfig = EstimationConfigSchema.parse({});

export interface EstimatedBatch {
  /** The kept samples in their original order, each with its advantage. */
  readonly samples: Sample[];
  readonly filters: FilterReport;
}

/**
 * Filters groups, then sets every kept sample's advantage from its group's returns. Groups are
 * the samples sharing a `groupKey`; members keep batch order, which is the order their strategy
 * emitted them in (an advantage depends on it only through floating-point summation order).
 */
export function estimateAdvantages(
  samples: readonly RolloutSample[],
  config: EstimationConfig,
): EstimatedBatch {
  const filtered = config.filters
    ? filterGroups(samples, config.filters)
    : {
        samples: [...samples],
        report: { kept: groupSamples(samples).size, droppedZeroVariance: 0, droppedLowMean: 0 },
      };
  const advantage = new Map<RolloutSample, number>();
  for (const members of groupSamples(filtered.samples).values()) {
    const advantages = groupAdvantages(
      members.map((s) => s.return),
      config,
    );
    members.forEach((s, i) => advantage.set(s, advantages[i]!));
  }
  return {
    samples: filtered.samples.map((s) => ({ ...s, advantage: advantage.get(s)! })),
    filters: filtered.report,
  };
}
