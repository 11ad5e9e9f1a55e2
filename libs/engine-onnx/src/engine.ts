/**
 * `OnnxEngine`: the embedded CPU engine. Each policy holds its config, float32 weights (HF names),
 * tokenizer and AdamW state; its graphs (scoring, decode, train) run in ONNX Runtime sessions that
 * take the weights as inputs, so an optimizer update is just an in-place write to the arrays.
 *
 * trainStep = for each micro-batch: forward + backward of the PPO loss (one ORT run) → sum the
 * gradients → AdamW (global-norm clip, schedule, decoupled decay; a non-finite norm means no
 * update and an error naming the first bad gradient entry).
 * Calls run one at a time (one queue for the engine), so a generation never sees half-updated
 * weights and at most one graph run holds activations at any moment.
 *
 * Memory: with `activationBudgetBytes`, every run — a training micro-batch, a scoring chunk, a
 * generation's row group — is cut so that its estimated peak (runtime/memory.ts: the graph's
 * liveness at that shape, times ORT's measured overhead) stays under the budget; a sequence that
 * cannot fit alone is refused with a `MemoryBudgetError` before anything runs. The memory ORT's
 * arenas keep between runs stays within the same budget, together with the running graph
 * (runtime/arena.ts).
 */
import {
  type Completion,
  canonicalJson,
  formatBytes,
  type Observation,
  type PolicyId,
  type SamplingParams,
  SamplingParamsSchema,
} from "@troupe/core";
import {
  AdamW,
  type AdamWState,
  addLossSums,
  aggregationWeights,
  ByteTokenizer,
  type CheckpointFiles,
  checkWeightsAgainstConfig,
  decodeCheckpoint,
  type Engine,
  type EngineGenerateRequest,
  emptyLossSums,
  encodeCheckpoint,
  generateByPolicy,
  initQwenWeights,
  lossMetrics,
  type MicroBatch,
  MicroBatchTooLargeError,
  type OptimizerConfig,
  type PolicyInfo,
  planMicroBatches,
  type QwenConfig,
  qwenParameterCount,
  type Tokenizer,
  type TokenSequence,
  TRAINER_STATE_FORMAT_VERSION,
  type TrainMetrics,
  type TrainSequence,
  type TrainStepConfig,
  tinyQwenConfig,
  type Weights,
} from "@troupe/engine";
import { packWeights } from "./model/fused-weights.ts";
import { batchingLimits, ContinuousBatcher, type ContinuousBatchingOptions } from "./runtime/continuous.ts";
import { type GenerateOptions, generateBatch } from "./runtime/generate.ts";
import { ModelRunner } from "./runtime/runner.ts";
import type { LossSequenceInput } from "./runtime/sequence-runner.ts";

/** Sequences per scoring run in `logprobs` (bounds activation memory). */
export const DEFAULT_SCORING_BATCH = 16;

export interface OnnxPolicySpec {
  readonly id: PolicyId;
  /** Build from scratch with this config (default: `tinyQwenConfig()`), unless `checkpoint` is given. */
  readonly config?: QwenConfig;
  /** Initial weights (HF names); default: `initQwenWeights(config, seed)`. */
  readonly weights?: Weights;
  /** Default: the built-in `ByteTokenizer`. */
  readonly tokenizer?: Tokenizer;
  /** Seed of the weight initialisation. */
  readonly seed?: number;
  /** Load everything (config, weights, tokenizer, optimizer state) from checkpoint files instead. */
  readonly checkpoint?: CheckpointFiles;
}

export interface OnnxEngineOptions {
  readonly policies: readonly OnnxPolicySpec[];
  /**
   * Bytes one graph run may take beyond the weights (activations, host inputs, ORT's scratch):
   * runs are cut into micro-batches / row groups that stay under it, and ORT's arenas (the memory
   * the training, scoring and prefill sessions keep between runs) and the run together stay under
   * it too (runtime/arena.ts). Default: unbounded.
   */
  readonly activationBudgetBytes?: number;
  /**
   * Let each of ORT's arenas keep what its largest run took, unbounded (`ModelRunnerOptions.memoryArena`):
   * each policy's train, score and prefill sessions may each hold `activationBudgetBytes`, so the
   * caller gives each run a share of what it can spare. Default false: the arenas are bounded
   * together by `activationBudgetBytes` (an idle one is released when a run needs the room).
   */
  readonly memoryArena?: boolean;
  /**
   * Score and train with the last layer's queries, MLP and output head on the columns that predict
   * completion tokens only (`ModelRunnerOptions.completionWindow`): the same numbers up to float rounding,
   * less work for long prompts and short answers. Default false.
   */
  readonly completionWindow?: boolean;
  /** Bounds of `generateContinuous` (rows decoded together, sequences waiting), per policy. */
  readonly continuousBatching?: ContinuousBatchingOptions;
}

/** A run that cannot be cut small enough for the activation budget (one sequence is already over). */
export class MemoryBudgetError extends Error {
  constructor(
    message: string,
    /** The estimated bytes of the smallest run, and the budget. */
    readonly neededBytes: number,
    readonly budgetBytes: number,
  ) {
    super(message);
    this.name = "MemoryBudgetError";
  }
}

interface PolicyState {
  readonly id: PolicyId;
  config: QwenConfig;
  weights: Weights;
  tokenizer: Tokenizer;
  runner: ModelRunner;
  optimizer: AdamW | undefined;
  optimizerKey: string | undefined;
  /** Optimizer state loaded from a checkpoint, applied when the optimizer is (re)built. */
  pendingOptimizerState: AdamWState | undefined;
  optimizerStep: number;
  /** Changes whenever the weights change (updates, loads): the decode session bakes them in per version. */
  weightsVersion: number;
}

export async function createOnnxEngine(options: OnnxEngineOptions): Promise<OnnxEngine> {
  const engine = new OnnxEngine(
    options.activationBudgetBytes,
    options.memoryArena,
    options.continuousBatching,
    options.completionWindow,
  );
  for (const spec of options.policies) engine.addPolicy(spec);
  return engine;
}

export class OnnxEngine implements Engine {
  readonly kind = "onnx";
  private readonly states = new Map<PolicyId, PolicyState>();
  /** The engine's one queue: every call runs after the earlier ones have finished. */
  private queue: Promise<unknown> = Promise.resolve();
  /** Per policy, the continuous batch of `generateContinuous` (created on first use). */
  private readonly batchers = new Map<PolicyId, ContinuousBatcher>();

  constructor(
    readonly activationBudgetBytes = Number.POSITIVE_INFINITY,
    readonly memoryArena = false,
    readonly continuousBatching: ContinuousBatchingOptions = {},
    readonly completionWindow = false,
  ) {
    if (!(activationBudgetBytes > 0))
      throw new Error(`onnx engine: activationBudgetBytes must be > 0, got ${activationBudgetBytes}`);
    batchingLimits(continuousBatching); // a bad bound fails here, not at the first generation
  }

  addPolicy(spec: OnnxPolicySpec): void {
    if (this.states.has(spec.id)) throw new Error(`onnx engine: duplicate policy id "${spec.id}"`);
    let config: QwenConfig;
    let weights: Weights;
    let tokenizer: Tokenizer;
    let optimizerState: AdamWState | undefined;
    let optimizerStep = 0;
    if (spec.checkpoint !== undefined) {
      const ckpt = decodeCheckpoint(spec.checkpoint);
      ({ config, weights, tokenizer } = ckpt);
      packWeights(config, weights);
      optimizerState = ckpt.optimizerState;
      optimizerStep = ckpt.trainerState?.optimizer_step ?? optimizerState?.step ?? 0;
    } else {
      config = spec.config ?? tinyQwenConfig();
      weights = spec.weights ?? initQwenWeights(config, spec.seed ?? 0);
      checkWeightsAgainstConfig(weights, config);
      packWeights(config, weights);
      tokenizer = spec.tokenizer ?? new ByteTokenizer();
      if (tokenizer.vocabSize > config.vocab_size) {
        throw new Error(
          `onnx engine: policy "${spec.id}": the tokenizer has ${tokenizer.vocabSize} ids, more than vocab_size ${config.vocab_size}`,
        );
      }
    }
    this.states.set(spec.id, {
      id: spec.id,
      config,
      weights,
      tokenizer,
      runner: new ModelRunner(config, "float32", `policy "${spec.id}"`, {
        vocab: Math.min(tokenizer.vocabSize, config.vocab_size),
        memoryArena: this.memoryArena,
        arenaBudgetBytes: this.activationBudgetBytes,
        completionWindow: this.completionWindow,
      }),
      optimizer: undefined,
      optimizerKey: undefined,
      pendingOptimizerState: optimizerState,
      optimizerStep,
      weightsVersion: 0,
    });
  }

  policies(): readonly PolicyInfo[] {
    return [...this.states.values()].map((s) => ({
      id: s.id,
      parameters: qwenParameterCount(s.config),
      vocabSize: s.config.vocab_size,
      optimizerStep: s.optimizerStep,
    }));
  }

  /** The live weights of a policy (updated in place by `trainStep`). */
  weightsOf(policyId: PolicyId): Weights {
    return this.state(policyId).weights;
  }

  /** The policy's graph runner (benchmarks and tools that drive the graphs directly). */
  runnerOf(policyId: PolicyId): ModelRunner {
    return this.state(policyId).runner;
  }

  tokenizerOf(policyId: PolicyId): Tokenizer {
    return this.state(policyId).tokenizer;
  }

  private state(policyId: PolicyId): PolicyState {
    const s = this.states.get(policyId);
    if (s === undefined) {
      throw new Error(
        `onnx engine: unknown policy "${policyId}" (known: ${[...this.states.keys()].join(", ") || "none"})`,
      );
    }
    return s;
  }

  /** Runs `fn` after every earlier call has finished (see the module comment). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * The micro-batches of a run over sequences of `lengths` tokens: at most `maxSequences` each
   * (and `maxTokens` padded tokens), and each under the activation budget by `bytes(rows, longest)`.
   */
  private plan(
    s: PolicyState,
    what: string,
    lengths: readonly number[],
    limits: { maxSequences: number; maxTokens?: number | undefined },
    bytes: (rows: number, longest: number) => number,
  ): MicroBatch[] {
    const budget = this.activationBudgetBytes;
    const bounded = Number.isFinite(budget);
    try {
      return planMicroBatches(lengths, {
        ...limits,
        fits: bounded ? (rows, longest) => bytes(rows, longest) <= budget : undefined,
      });
    } catch (error) {
      if (!(error instanceof MicroBatchTooLargeError)) throw error;
      const needed = bytes(1, error.length);
      if (bounded && needed > budget) {
        throw new MemoryBudgetError(
          `onnx engine: policy "${s.id}": ${what} one sequence of ${error.length} tokens needs an estimated ` +
            `${formatBytes(needed)}, more than the ${formatBytes(budget)} the memory budget leaves for one run (raise memoryBudget)`,
          needed,
          budget,
        );
      }
      throw new Error(`onnx engine: policy "${s.id}": ${error.message}`);
    }
  }

  /** The policy's `MemoryPlan.sequenceBytes`: one sequence's estimated peak per kind of run. */
  sequenceBytes(
    policyId: PolicyId,
    tokens: number,
    maxTokens: number,
  ): Record<"train" | "score" | "generate", number> {
    return this.state(policyId).runner.memory.sequenceBytes(tokens, maxTokens);
  }

  async generate(
    requests: readonly EngineGenerateRequest[],
    sampling: SamplingParams,
    options: GenerateOptions = {},
  ): Promise<Completion[]> {
    const params = SamplingParamsSchema.parse(sampling);
    return generateByPolicy(
      requests,
      (policyId) => this.state(policyId),
      (policyId, own) => this.generateFor(policyId, own, params, options),
    );
  }

  /** One policy's requests, in row groups under the activation budget; completions in request order. */
  private generateFor(
    policyId: PolicyId,
    own: readonly EngineGenerateRequest[],
    params: SamplingParams,
    options: GenerateOptions,
  ): Promise<Completion[]> {
    const s = this.state(policyId);
    return this.exclusive(async () => {
      const prompts = own.map((r) => s.tokenizer.encodeChat(r.observation.messages));
      const seeds = own.map((r) => r.seed);
      // Row groups under the budget; each row samples alone (its own seed), so a completion is
      // the same whichever group it lands in.
      const groups = this.plan(
        s,
        "generating for",
        prompts.map((p) => p.length),
        { maxSequences: prompts.length },
        (rows, longest) => s.runner.memory.generateBytes(rows, longest, params.maxTokens),
      );
      const out: Completion[] = [];
      for (const g of groups) {
        out.push(
          ...(await generateBatch(
            s.runner,
            s.weights,
            s.tokenizer,
            prompts.slice(g.start, g.end),
            seeds.slice(g.start, g.end),
            params,
            { weightsVersion: s.weightsVersion, ...options },
          )),
        );
      }
      return out;
    });
  }

  /**
   * One generation that joins the policy's running batch (runtime/continuous.ts): concurrent callers share
   * every decode step instead of waiting for each other's whole generation. Same completion as
   * `generate` with the same seed (at temperature 0, the same tokens). Rejects with
   * `GenerationQueueFullError` when the policy's queue is full, with `signal.reason` once aborted.
   * Runs are not cut by the activation budget: rows are bounded by `continuousBatching.maxBatch`.
   */
  async generateContinuous(
    request: EngineGenerateRequest,
    sampling: SamplingParams,
    options: { readonly signal?: AbortSignal | undefined } = {},
  ): Promise<Completion> {
    const s = this.state(request.policyId);
    let batcher = this.batchers.get(s.id);
    if (batcher === undefined) {
      batcher = new ContinuousBatcher(
        s.id,
        () => s,
        (fn) => this.exclusive(fn),
        this.continuousBatching,
      );
      this.batchers.set(s.id, batcher);
    }
    const prompt = s.tokenizer.encodeChat(request.observation.messages);
    return batcher.generate(prompt, request.seed, SamplingParamsSchema.parse(sampling), options.signal);
  }

  /** Queue and batch sizes of a policy's continuous batch (undefined before its first call). */
  continuousStats(policyId: PolicyId) {
    return this.batchers.get(policyId)?.stats();
  }

  /** Prompt = chat template + generation prompt; completion = its tokens then the end-of-turn token. */
  encode(policyId: PolicyId, observation: Observation, completion?: string): TokenSequence {
    const s = this.state(policyId);
    const promptTokenIds = s.tokenizer.encodeChat(observation.messages);
    const completionTokenIds =
      completion === undefined ? [] : [...s.tokenizer.encode(completion), s.tokenizer.eosTokenId];
    return { promptTokenIds, completionTokenIds };
  }

  async logprobs(policyId: PolicyId, sequences: readonly TokenSequence[]): Promise<number[][]> {
    const s = this.state(policyId);
    return this.exclusive(async () => {
      s.runner.checkTokens(sequences);
      const chunks = this.plan(
        s,
        "scoring",
        sequences.map((q) => q.promptTokenIds.length + q.completionTokenIds.length),
        { maxSequences: DEFAULT_SCORING_BATCH },
        (rows, longest) => s.runner.memory.runBytes("score", rows, longest),
      );
      const out: number[][] = [];
      for (const c of chunks)
        out.push(...(await s.runner.sequences.score(s.weights, sequences.slice(c.start, c.end))).logprobs);
      return out;
    });
  }

  async trainStep(
    policyId: PolicyId,
    batch: readonly TrainSequence[],
    config: TrainStepConfig,
  ): Promise<TrainMetrics> {
    const s = this.state(policyId);
    return this.exclusive(() => this.trainStepLocked(s, batch, config));
  }

  private async trainStepLocked(
    s: PolicyState,
    batch: readonly TrainSequence[],
    config: TrainStepConfig,
  ): Promise<TrainMetrics> {
    const label = `onnx engine: policy "${s.id}"`;
    if (batch.length === 0) throw new Error(`${label}: trainStep got an empty batch`);
    const micro = config.microBatchSize;
    if (!Number.isInteger(micro) || micro < 1)
      throw new Error(`${label}: microBatchSize must be an integer ≥ 1, got ${micro}`);
    const loss = config.loss;
    batch.forEach((seq, b) => {
      const n = seq.completionTokenIds.length;
      if (seq.oldLogprobs.length !== n) {
        throw new Error(
          `${label}: sequence ${b}: oldLogprobs has ${seq.oldLogprobs.length} entries, the completion ${n} tokens`,
        );
      }
      if (seq.refLogprobs !== undefined && seq.refLogprobs.length !== n) {
        throw new Error(
          `${label}: sequence ${b}: refLogprobs has ${seq.refLogprobs.length} entries, the completion ${n} tokens`,
        );
      }
      if (loss.klCoef !== 0 && seq.refLogprobs === undefined) {
        throw new Error(`${label}: sequence ${b}: refLogprobs are missing but loss.klCoef is ${loss.klCoef}`);
      }
      if (!Number.isFinite(seq.advantage))
        throw new Error(`${label}: sequence ${b}: advantage is ${seq.advantage}`);
    });
    s.runner.checkTokens(batch);
    const masks = batch.map((seq) => seq.completionTokenIds.map(() => 1));
    const tokens = masks.reduce((n, m) => n + m.length, 0);
    if (tokens === 0) throw new Error(`${label}: the batch has no completion token`);
    const tokenWeights = aggregationWeights(masks, loss.aggregation);
    const inputs: LossSequenceInput[] = batch.map((seq, b) => ({
      promptTokenIds: seq.promptTokenIds,
      completionTokenIds: seq.completionTokenIds,
      oldLogprobs: seq.oldLogprobs,
      refLogprobs: seq.refLogprobs,
      advantages: seq.completionTokenIds.map(() => seq.advantage),
      mask: masks[b]!,
      tokenWeights: tokenWeights[b]!,
    }));

    // Micro-batches of at most `micro` sequences under the token and memory budgets. Token
    // weights were taken over the whole batch above, so the summed gradient is the batch's.
    const plan = this.plan(
      s,
      "training on",
      batch.map((q) => q.promptTokenIds.length + q.completionTokenIds.length),
      { maxSequences: micro, maxTokens: config.maxTokensPerMicroBatch },
      (rows, longest) => s.runner.memory.runBytes("train", rows, longest),
    );
    const sums = emptyLossSums();
    const grads = new Map<string, Float32Array>();
    // The runner writes each micro-batch's gradients into the same reused buffers; with several
    // micro-batches the first is copied into a sum that the later ones are added to.
    const several = plan.length > 1;
    for (const { start, end } of plan) {
      const part = inputs.slice(start, end);
      if (part.every((p) => p.completionTokenIds.length === 0)) continue;
      const r = await s.runner.sequences.trainMicroBatch(s.weights, part, loss, {
        reuseGradientBuffers: true,
      });
      addLossSums(sums, r);
      for (const [name, g] of r.grads) {
        const acc = grads.get(name);
        if (acc === undefined) grads.set(name, several ? Float32Array.from(g) : (g as Float32Array));
        else for (let i = 0; i < acc.length; i++) acc[i] = acc[i]! + g[i]!;
      }
    }
    if (!Number.isFinite(sums.loss))
      throw new Error(`${label}: the loss is ${sums.loss}; no update was applied`);
    const optimizer = this.optimizerFor(s, config.optimizer);
    // AdamW skips the update when the gradient norm is not finite; only then is it worth a scan
    // for the first bad entry (a finite norm means every entry is finite).
    const step = optimizer.step(grads);
    s.weightsVersion++;
    if (!Number.isFinite(step.gradNorm)) {
      const bad = firstNonFinite(grads);
      throw new Error(
        bad === undefined
          ? `${label}: the gradient norm is ${step.gradNorm}; no update was applied`
          : `${label}: the gradient of ${bad.name} is ${bad.value} at index ${bad.index}; no update was applied`,
      );
    }
    s.optimizerStep = step.step;
    return { ...lossMetrics(sums, tokens), gradNorm: step.gradNorm, lr: step.lr, optimizerStep: step.step };
  }

  /** The policy's AdamW for this config; a changed config keeps the moments and step count. */
  private optimizerFor(s: PolicyState, config: OptimizerConfig): AdamW {
    const key = canonicalJson(config);
    if (s.optimizer !== undefined && s.optimizerKey === key) return s.optimizer;
    const previous = s.optimizer?.state() ?? s.pendingOptimizerState;
    const optimizer = new AdamW(s.weights, config);
    if (previous !== undefined) optimizer.loadState(previous);
    s.optimizer = optimizer;
    s.optimizerKey = key;
    s.pendingOptimizerState = undefined;
    return optimizer;
  }

  async save(policyId: PolicyId): Promise<CheckpointFiles> {
    const s = this.state(policyId);
    return this.exclusive(async () =>
      encodeCheckpoint({
        config: s.config,
        weights: s.weights,
        tokenizer: s.tokenizer,
        optimizerState: s.optimizer?.state() ?? s.pendingOptimizerState,
        trainerState: { format_version: TRAINER_STATE_FORMAT_VERSION, optimizer_step: s.optimizerStep },
      }),
    );
  }

  async load(policyId: PolicyId, files: CheckpointFiles): Promise<void> {
    const s = this.state(policyId);
    await this.exclusive(async () => {
      const ckpt = decodeCheckpoint(files);
      // The graphs depend on the config and on the tokenizer's vocabulary size (the scored ids).
      if (
        canonicalJson(ckpt.config) !== canonicalJson(s.config) ||
        ckpt.tokenizer.vocabSize !== s.tokenizer.vocabSize
      ) {
        await s.runner.release();
        s.runner = new ModelRunner(ckpt.config, "float32", `policy "${s.id}"`, {
          vocab: Math.min(ckpt.tokenizer.vocabSize, ckpt.config.vocab_size),
          memoryArena: this.memoryArena,
          arenaBudgetBytes: this.activationBudgetBytes,
          completionWindow: this.completionWindow,
        });
        s.config = ckpt.config;
      }
      s.weights = packWeights(ckpt.config, ckpt.weights);
      s.weightsVersion++;
      s.tokenizer = ckpt.tokenizer;
      s.optimizer = undefined;
      s.optimizerKey = undefined;
      s.pendingOptimizerState = ckpt.optimizerState;
      s.optimizerStep = ckpt.trainerState?.optimizer_step ?? ckpt.optimizerState?.step ?? 0;
    });
  }

  async close(): Promise<void> {
    for (const b of this.batchers.values()) b.close();
    for (const s of this.states.values()) await this.exclusive(() => s.runner.release());
  }
}

/** The first non-finite gradient entry, in the weights' order. */
export function firstNonFinite(
  grads: ReadonlyMap<string, ArrayLike<number>>,
): { name: string; index: number; value: number } | undefined {
  for (const [name, g] of grads) {
    for (let i = 0; i < g.length; i++) {
      if (!Number.isFinite(g[i]!)) return { name, index: i, value: g[i]! };
    }
  }
  return undefined;
}
