import { z } from "zod";
import type { Observation } from "./messages.ts";
import type { PolicyId } from "./team.ts";

/** Sampling parameters, as every engine and OpenAI-compatible server understands them. */
export const SamplingParamsSchema = z.object({
  temperature: z.number().min(0).default(1),
  topP: z.number().gt(0).max(1).default(1),
  /** 0 disables top-k. */
  topK: z.number().int().min(0).default(0),
  maxTokens: z.number().int().min(1).default(256),
  /** Generation stops before the first occurrence of any of these strings (not included in the text). */
  stop: z.array(z.string().min(1)).default([]),
  /** Generation stops after any of these token ids (included in the tokens, not in the text). */
  stopTokenIds: z.array(z.number().int().min(0)).default([]),
});
export type SamplingParams = z.infer<typeof SamplingParamsSchema>;

export const defaultSampling: SamplingParams = SamplingParamsSchema.parse({});

/**
 * Some of the sampling parameters, to lay over others (a role's own sampling over its team's):
 * the fields of SamplingParamsSchema without their defaults, so an absent field is inherited.
 */
export const SamplingOverridesSchema = z.strictObject({
  temperature: SamplingParamsSchema.shape.temperature.unwrap().optional(),
  topP: SamplingParamsSchema.shape.topP.unwrap().optional(),
  topK: SamplingParamsSchema.shape.topK.unwrap().optional(),
  maxTokens: SamplingParamsSchema.shape.maxTokens.unwrap().optional(),
  stop: SamplingParamsSchema.shape.stop.unwrap().optional(),
  stopTokenIds: SamplingParamsSchema.shape.stopTokenIds.unwrap().optional(),
});

export function samplingParams(overrides: Partial<SamplingParams> = {}): SamplingParams {
  return SamplingParamsSchema.parse({ ...overrides });
}

/** One prompt to complete. The seed makes the completion reproducible whatever else is in the batch. */
export interface GenerationRequest {
  readonly observation: Observation;
  readonly seed: number;
}

export interface Completion {
  readonly text: string;
  readonly promptTokenIds: readonly number[];
  readonly tokenIds: readonly number[];
  /** log π(token) under the sampling distribution (after temperature / top-p / top-k), one per token. */
  readonly logprobs: readonly number[];
  readonly finishReason: "stop" | "length";
}

/** A policy as the RL core sees it: prompts in, completions with token ids and log-probs out. */
export interface Policy {
  readonly id: PolicyId;
  /** Version of the weights (the learner step that produced them); recorded in every sample. */
  readonly version: number;
  generate(requests: readonly GenerationRequest[], sampling: SamplingParams): Promise<Completion[]>;
}

/** Policies by id. */
export type PolicySet = Readonly<Record<PolicyId, Policy>>;
