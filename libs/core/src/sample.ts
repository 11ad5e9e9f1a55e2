/**
 * Samples are the training records: one agent's completion at one point of a rollout, with the
 * provenance that traces any number in a report back to the rollout behind it. Two stages, two types:
 *
 *   RolloutSample   what a rollout strategy produced: rewards, the return and the group, no
 *                   advantage yet (what rollout workers' shards hold)
 *   Sample          a RolloutSample with the advantage the trainer's advantage stage estimated
 *                   (what the learner trains on and a step's shards hold)
 */
import { z } from "zod";
import { ChatMessageSchema } from "./messages.ts";
import { SamplingParamsSchema } from "./policy.ts";
import { SplitSchema } from "./task.ts";

export const SAMPLE_SCHEMA_VERSION = 1;

export const ProvenanceSchema = z.object({
  runId: z.string(),
  /** Training step whose rollouts produced this sample. */
  step: z.number().int().min(0),
  /** Name of the rollout strategy that sampled it (the registry in @troupe/rl knows them). */
  strategy: z.string().min(1),
  environment: z.string(),
  taskId: z.string(),
  split: SplitSchema,
  /** Episode index within the task's group (parallel rollouts), 0 otherwise. */
  episode: z.number().int().min(0),
  turn: z.number().int().min(0),
  agent: z.string(),
  /** Child indices from the root of the rollout tree to the node this sample was drawn at. */
  branch: z.array(z.number().int().min(0)),
  /** Index of this completion among the siblings sampled for the same agent at the same node. */
  candidate: z.number().int().min(0),
  policyId: z.string(),
  policyVersion: z.number().int().min(0),
  sampling: SamplingParamsSchema,
  /** Seed of the generation request. */
  seed: z.number().int().min(0),
});
export type Provenance = z.infer<typeof ProvenanceSchema>;

export const RewardPartsSchema = z.object({
  team: z.number(),
  local: z.number(),
  /** The reward the estimator used: teamWeight · team + localWeight · local. */
  total: z.number(),
});
export type RewardParts = z.infer<typeof RewardPartsSchema>;

export const RolloutSampleSchema = z.object({
  schemaVersion: z.literal(SAMPLE_SCHEMA_VERSION),
  provenance: ProvenanceSchema,
  observation: z.array(ChatMessageSchema),
  completionText: z.string(),
  promptTokenIds: z.array(z.number().int().min(0)),
  completionTokenIds: z.array(z.number().int().min(0)),
  samplingLogprobs: z.array(z.number()),
  finishReason: z.enum(["stop", "length"]),
  reward: RewardPartsSchema,
  /** The return the advantage is estimated from (each strategy defines it; docs/algorithms.md). */
  return: z.number(),
  groupKey: z.string(),
  /** Whether the episode this sample belongs to ended in success, when known. */
  success: z.boolean().optional(),
});
export type RolloutSample = z.infer<typeof RolloutSampleSchema>;

export const SampleSchema = RolloutSampleSchema.extend({
  /** Group-relative advantage, set by the trainer's advantage stage. */
  advantage: z.number(),
});
export type Sample = z.infer<typeof SampleSchema>;

/** Validates a sample read from outside (a step's shard), naming the field that is wrong. */
export function parseSample(value: unknown, where = "sample"): Sample {
  return parseWith(SampleSchema, value, where);
}

/** Validates a rollout sample read from outside (a rollout worker's shard); an `advantage` is dropped. */
export function parseRolloutSample(value: unknown, where = "sample"): RolloutSample {
  return parseWith(RolloutSampleSchema, value, where);
}

function parseWith<T extends RolloutSample>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${where}: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  const s = parsed.data;
  if (s.samplingLogprobs.length !== s.completionTokenIds.length) {
    throw new Error(
      `${where}: samplingLogprobs has ${s.samplingLogprobs.length} entries for ${s.completionTokenIds.length} completion tokens`,
    );
  }
  return s;
}
