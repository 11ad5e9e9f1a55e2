/**
 * The engine interface: what computes policies. Two implementations share it — the embedded CPU
 * engine (`libs/engine-onnx`, ONNX Runtime in-process) and the GPU engine (a PyTorch worker driven
 * over a message protocol). All RL logic stays outside; an engine only generates, scores and
 * updates. Everything passed in and out is plain, serialisable data (verl's controller/worker
 * split): token ids, numbers, bytes.
 */
import type { Completion, Observation, PolicyId, SamplingParams } from "@troupe/core";
import type { LossMetrics, PolicyLossConfig } from "./loss.ts";

export interface EngineGenerateRequest {
  readonly policyId: PolicyId;
  readonly observation: Observation;
  /** Seeds the sampler of this request alone: the same seed gives the same completion in any batch. */
  readonly seed: number;
}

/** A scored sequence: prompt then completion, as token ids. */
export interface TokenSequence {
  readonly promptTokenIds: readonly number[];
  readonly completionTokenIds: readonly number[];
}

/** One sequence of a training batch. */
export interface TrainSequence extends TokenSequence {
  /** Log-probs of the completion tokens under the policy that sampled them (the PPO "old" policy). */
  readonly oldLogprobs: readonly number[];
  readonly advantage: number;
  /** Log-probs under the reference policy, when the loss has a KL term. */
  readonly refLogprobs?: readonly number[];
}

export interface OptimizerConfig {
  /** Peak learning rate of AdamW. */
  readonly lr: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;
  /** Global gradient-norm clip; 0 disables clipping. */
  readonly maxGradNorm: number;
  /** Linear warm-up steps, then the schedule. */
  readonly warmupSteps: number;
  readonly schedule: "constant" | "cosine" | "linear";
  /** Total optimizer steps, for the cosine/linear decay. */
  readonly totalSteps: number;
  /** Floor of the decay as a fraction of the peak LR. */
  readonly minLrRatio: number;
}

export const defaultOptimizerConfig: OptimizerConfig = {
  lr: 1e-5,
  beta1: 0.9,
  beta2: 0.999,
  eps: 1e-8,
  weightDecay: 0.01,
  maxGradNorm: 1.0,
  warmupSteps: 0,
  schedule: "constant",
  totalSteps: 1,
  minLrRatio: 0,
};

export interface TrainStepConfig {
  readonly loss: PolicyLossConfig;
  readonly optimizer: OptimizerConfig;
  /** Sequences per forward/backward; gradients are accumulated over micro-batches into one update. */
  readonly microBatchSize: number;
  /**
   * Padded tokens (sequences × the longest) per forward/backward, a second bound on each
   * micro-batch (verl's `ppo_max_token_len_per_gpu`); unbounded when absent. An engine with a memory
   * budget cuts further where its estimate says a micro-batch would not fit.
   */
  readonly maxTokensPerMicroBatch?: number | undefined;
}

export interface TrainMetrics extends LossMetrics {
  /** Global gradient norm before clipping. */
  readonly gradNorm: number;
  readonly lr: number;
  /** Optimizer steps taken by this policy so far (after this one). */
  readonly optimizerStep: number;
}

/**
 * A checkpoint as files, in the HF layout: `config.json`, `model.safetensors` (or
 * `adapter_model.safetensors` + `adapter_config.json` for LoRA), `tokenizer.json` or the built-in
 * tokenizer's description, `optimizer.safetensors`, `trainer_state.json`. Bytes, not paths, so the
 * store can put them anywhere (a folder, S3) and a Worker can read them.
 */
export type CheckpointFiles = Readonly<Record<string, Uint8Array>>;

export interface PolicyInfo {
  readonly id: PolicyId;
  /** Number of trainable parameters. */
  readonly parameters: number;
  readonly vocabSize: number;
  /** Optimizer steps taken. */
  readonly optimizerStep: number;
}

export interface Engine {
  /** `onnx` (embedded CPU), `torch` (GPU worker) or `openai` (remote, generate only). */
  readonly kind: string;
  policies(): readonly PolicyInfo[];
  generate(requests: readonly EngineGenerateRequest[], sampling: SamplingParams): Promise<Completion[]>;
  /**
   * Tokenizes an observation as the policy's prompt (chat template + generation prompt) and, when
   * given, a completion text as the policy would have produced it, ending with its end-of-turn
   * token. Supervised warm starts and external rollouts build training sequences with it.
   */
  encode(policyId: PolicyId, observation: Observation, completion?: string): TokenSequence;
  /** Log-probs of each completion token given the prompt and the earlier completion tokens. */
  logprobs(policyId: PolicyId, sequences: readonly TokenSequence[]): Promise<number[][]>;
  /** One optimizer update of a policy from a batch (micro-batched, gradients accumulated). */
  trainStep(
    policyId: PolicyId,
    batch: readonly TrainSequence[],
    config: TrainStepConfig,
  ): Promise<TrainMetrics>;
  save(policyId: PolicyId): Promise<CheckpointFiles>;
  load(policyId: PolicyId, files: CheckpointFiles): Promise<void>;
  close(): Promise<void>;
}
