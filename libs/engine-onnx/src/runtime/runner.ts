/**
 * One model's runtime, in three parts over the graphs of model/graphs.ts:
 *
 *   sequences  the trainer/scorer: whole sequences through the scoring and training graphs
 *              (sequence-runner.ts)
 *   decoder    generation's prefill and single-token steps over the KV caches of kv-cache.ts
 *              (decode-runner.ts)
 *   memory     the memory plan: the estimated peak bytes of each kind of run (memory-plan.ts)
 *
 * The runner owns the options they share (the vocabulary, the arenas' bound, the completion
 * window) and checks them once.
 */
import type { QwenConfig } from "@troupe/engine";
import type { FloatDType } from "../graph/builder.ts";
import type { BoundedSession } from "./arena.ts";
import { DEFAULT_MAX_CONSTANT_PARAMETERS, DecodeRunner } from "./decode-runner.ts";
import { MemoryPlan } from "./memory-plan.ts";
import { checkTokens, type ScoredSequence, SequenceRunner } from "./sequence-runner.ts";

export interface ModelRunnerOptions {
  /** Largest model (parameters) whose decode step session gets the weights baked in as constants. */
  readonly maxConstantParameters?: number;
  /**
   * Ids the policy can produce (its tokenizer's vocabulary size; default vocab_size). Scoring and
   * training take the softmax over these only, as the sampler does, and reject other token ids.
   */
  readonly vocab?: number;
  /**
   * The training, scoring and prefill sessions allocate from ORT's CPU arena (arena.ts: 1.2–1.6×
   * faster than fresh pages). With `memoryArena` each of them keeps what its largest run took,
   * unbounded: whoever sets it plans every run under a share of the memory (see the engine option).
   * Without it (the default) the arenas are bounded together by `arenaBudgetBytes` (arena.ts):
   * idle arenas are released when a run needs the room, and a run too large for an arena runs
   * without one.
   */
  readonly memoryArena?: boolean;
  /** What the arenas and one run may hold together (default unbounded); ignored with `memoryArena`. */
  readonly arenaBudgetBytes?: number;
  /**
   * Score and train with the windowed graphs (`ScoringOptions.window`): sequences left-padded, and
   * the last layer's queries, MLP and the output head run only on the trailing columns that
   * predict completion tokens. The same logprobs and gradients up to float rounding, for less work
   * where prompts are long next to completions (the games' prompts: ≈ 10× their answers).
   * (Generation's prefill runs its last layer on the last column only either way.)
   */
  readonly completionWindow?: boolean;
}

export class ModelRunner {
  readonly sequences: SequenceRunner;
  readonly decoder: DecodeRunner;
  readonly memory: MemoryPlan;
  /** Ids the policy can produce (see `ModelRunnerOptions.vocab`). */
  readonly vocab: number;

  constructor(
    readonly config: QwenConfig,
    readonly dtype: FloatDType = "float32",
    readonly label = "model",
    options: ModelRunnerOptions = {},
  ) {
    const arenaBudgetBytes = options.arenaBudgetBytes ?? Number.POSITIVE_INFINITY;
    if (!(arenaBudgetBytes > 0))
      throw new Error(`${label}: arenaBudgetBytes must be > 0, got ${arenaBudgetBytes}`);
    this.vocab = options.vocab ?? config.vocab_size;
    if (!Number.isInteger(this.vocab) || this.vocab < 1 || this.vocab > config.vocab_size)
      throw new Error(
        `${label}: vocab ${this.vocab} must be an integer in [1, vocab_size ${config.vocab_size}]`,
      );
    const arenaLimit = options.memoryArena ? Number.POSITIVE_INFINITY : arenaBudgetBytes;
    const completionWindow = options.completionWindow ?? false;
    this.memory = new MemoryPlan(config, dtype, this.vocab);
    this.sequences = new SequenceRunner(this.memory, label, { completionWindow, arenaLimit });
    this.decoder = new DecodeRunner(this.memory, label, {
      maxConstantParameters: options.maxConstantParameters ?? DEFAULT_MAX_CONSTANT_PARAMETERS,
      arenaLimit,
    });
  }

  /** The arena sessions (diagnostics and tests: what each holds, how often it was created). */
  get arenaSessions(): Readonly<Record<"scoring" | "train" | "prefill", BoundedSession>> {
    return {
      scoring: this.sequences.scoring,
      train: this.sequences.train,
      prefill: this.decoder.prefillSession,
    };
  }

  /** Throws naming the sequence, the position and the id of the first token outside the vocabulary. */
  checkTokens(sequences: readonly ScoredSequence[]): void {
    checkTokens(sequences, this.vocab, this.config.vocab_size, this.label);
  }

  async release(): Promise<void> {
    await this.sequences.release();
    await this.decoder.release();
  }
}
