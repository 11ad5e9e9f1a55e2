/**
 * The trainer/scorer of one model: runs the scoring and training graphs (model/graphs.ts) over
 * whole sequences, batched on the host into padded tensors. Both sessions keep an ORT arena
 * bounded by arena.ts, sized by the model's memory plan.
 *
 * Right-padded, the per-token arrays are [B, T] with sequence b's completion at columns
 * [prompt − 1, …); with the completion window, left-padded and [B, W] (W the longest completion),
 * every completion ending its row (model/query-window.ts).
 */
import type { LossSums, PolicyLossConfig, QwenConfig } from "@troupe/engine";
import type { FloatDType } from "../graph/builder.ts";
import { graphWeightSpecs } from "../model/fused-weights.ts";
import { buildScoringGraph, buildTrainGraph, gradName, TRAIN_INPUTS } from "../model/graphs.ts";
import { attentionBias, floatArray, ropeTables } from "../model/host-inputs.ts";
import { BoundedSession } from "./arena.ts";
import type { MemoryPlan } from "./memory-plan.ts";
import { padBatch } from "./padding.ts";
import { type FloatArray, type ort, tensor } from "./session.ts";
import { type HostWeights, weightFeeds } from "./weight-feeds.ts";

export interface ScoredSequence {
  readonly promptTokenIds: readonly number[];
  readonly completionTokenIds: readonly number[];
}

export interface ScoreResult {
  /** Per sequence, log p of each completion token. */
  readonly logprobs: number[][];
  /** Per sequence, entropy of the model distribution at each completion token's position. */
  readonly entropies: number[][];
}

/** One training sequence with everything the loss needs, per completion token. */
export interface LossSequenceInput extends ScoredSequence {
  readonly oldLogprobs: readonly number[];
  readonly advantages: readonly number[];
  readonly refLogprobs?: readonly number[];
  /** Aggregation weight of each completion token (0 for a masked-out token). */
  readonly tokenWeights: readonly number[];
  readonly mask: readonly number[];
}

/** The loss settings the training graph reads: the aggregation is already in each token's weight. */
export type LossSettings = Omit<PolicyLossConfig, "aggregation">;

/** One micro-batch's loss sums (added up by the engine), with its per-token outputs and gradients. */
export interface MicroBatchResult extends Readonly<LossSums> {
  readonly logprobs: number[][];
  readonly entropies: number[][];
  readonly grads: Map<string, FloatArray>;
}

/** The host inputs of one scoring or training run, and where each completion token's outputs are. */
interface SequenceFeeds {
  readonly feeds: Record<string, ort.Tensor>;
  /** Columns of a per-token array. */
  readonly width: number;
  /** Index of completion token j of sequence b in a per-token array. */
  readonly column: (b: number, j: number) => number;
}

export class SequenceRunner {
  /** The sessions whose shapes change from run to run, each with an arena bounded by arena.ts. */
  readonly scoring: BoundedSession;
  readonly train: BoundedSession;
  /** The weight inputs of both graphs: the HF tensors, unfused. */
  private readonly weightSpecs;
  private gradientBuffers?: Record<string, ort.Tensor> | undefined;

  readonly config: QwenConfig;
  readonly dtype: FloatDType;
  /** Ids the policy can produce: the softmax runs over these only. */
  readonly vocab: number;

  /** The model (its config, float type and vocabulary) is the memory plan's. */
  constructor(
    private readonly plan: MemoryPlan,
    readonly label: string,
    private readonly options: {
      /** Left-padded sequences and the windowed graphs (`ModelRunnerOptions.completionWindow`). */
      readonly completionWindow: boolean;
      /** What the arenas and one run may hold together (arena.ts). */
      readonly arenaLimit: number;
    },
  ) {
    const { config, dtype, vocab } = plan;
    this.config = config;
    this.dtype = dtype;
    this.vocab = vocab;
    this.weightSpecs = graphWeightSpecs(config, false);
    const graphOptions = { vocab, window: options.completionWindow };
    this.scoring = new BoundedSession(`${label} scoring`, () =>
      buildScoringGraph(config, dtype, graphOptions),
    );
    this.train = new BoundedSession(`${label} training`, () => buildTrainGraph(config, dtype, graphOptions));
  }

  /** Per sequence, the log-probs and entropies of its completion tokens. */
  async score(weights: HostWeights, sequences: readonly ScoredSequence[]): Promise<ScoreResult> {
    if (sequences.length === 0) return { logprobs: [], entropies: [] };
    checkTokens(sequences, this.vocab, this.config.vocab_size, this.label);
    const { feeds, column } = this.sequenceFeeds(sequences);
    const bytes = this.plan.sequencesBytes("score", sequences);
    const out = await this.scoring.run(bytes, this.options.arenaLimit, (session) =>
      session.run({ ...weightFeeds(weights, this.weightSpecs, this.dtype, this.label), ...feeds }),
    );
    return {
      logprobs: completionRows(out.logprobs!, sequences, column),
      entropies: completionRows(out.entropy!, sequences, column),
    };
  }

  /**
   * Forward + backward of the loss on one micro-batch. With `reuseGradientBuffers`, ORT writes the
   * gradients into buffers this runner keeps (no allocation and no copy into fresh JS arrays per
   * run); the returned gradients are then only valid until the next call.
   */
  async trainMicroBatch(
    weights: HostWeights,
    sequences: readonly LossSequenceInput[],
    settings: LossSettings,
    options: { readonly reuseGradientBuffers?: boolean } = {},
  ): Promise<MicroBatchResult> {
    checkTokens(sequences, this.vocab, this.config.vocab_size, this.label);
    const { feeds, width, column } = this.sequenceFeeds(sequences);
    const lossFeeds = this.lossFeeds(sequences, settings, width, column);
    const bytes = this.plan.sequencesBytes("train", sequences);
    const out = await this.train.run(bytes, this.options.arenaLimit, (session) =>
      session.run(
        { ...weightFeeds(weights, this.weightSpecs, this.dtype, this.label), ...feeds, ...lossFeeds },
        options.reuseGradientBuffers ? this.gradientOutputs() : undefined,
      ),
    );
    const num = (name: string) => Number((out[name]!.data as FloatArray)[0]);
    const grads = new Map<string, FloatArray>();
    for (const spec of this.weightSpecs) grads.set(spec.name, out[gradName(spec.name)]!.data as FloatArray);
    return {
      loss: num("loss"),
      pgLoss: num("pg_loss"),
      kl: num("kl"),
      entropy: num("entropy_sum"),
      clipped: num("clipped"),
      oldMinusNew: num("old_minus_new"),
      logprobs: completionRows(out.logprobs!, sequences, column),
      entropies: completionRows(out.entropy!, sequences, column),
      grads,
    };
  }

  /** The loss inputs: per completion token [B, width] (0 elsewhere), and the scalar settings. */
  private lossFeeds(
    sequences: readonly LossSequenceInput[],
    settings: LossSettings,
    width: number,
    column: (b: number, j: number) => number,
  ): Record<string, ort.Tensor> {
    const B = sequences.length;
    const perToken = (pick: (s: LossSequenceInput, j: number) => number) => {
      const data = floatArray(this.dtype, B * width);
      sequences.forEach((s, b) => {
        for (let j = 0; j < s.completionTokenIds.length; j++) data[column(b, j)] = pick(s, j);
      });
      return tensor(this.dtype, data, [B, width]);
    };
    const scalar = (x: number) =>
      tensor(this.dtype, this.dtype === "float32" ? Float32Array.of(x) : Float64Array.of(x), []);
    const klOn = settings.klCoef !== 0;
    return {
      [TRAIN_INPUTS.oldLogprobs]: perToken((s, j) => s.oldLogprobs[j]!),
      [TRAIN_INPUTS.advantages]: perToken((s, j) => s.advantages[j]!),
      // Without a KL term, ℓ_ref = ℓ_old keeps exp(ℓ_ref − ℓ) finite (its weight is 0 anyway).
      [TRAIN_INPUTS.refLogprobs]: perToken((s, j) =>
        klOn && s.refLogprobs ? s.refLogprobs[j]! : s.oldLogprobs[j]!,
      ),
      [TRAIN_INPUTS.tokenWeights]: perToken((s, j) => s.tokenWeights[j]!),
      [TRAIN_INPUTS.mask]: perToken((s, j) => s.mask[j]!),
      [TRAIN_INPUTS.clipLow]: scalar(settings.clipLow),
      [TRAIN_INPUTS.clipHigh]: scalar(settings.clipHigh),
      [TRAIN_INPUTS.dualClip]: scalar(settings.dualClip ?? 0),
      [TRAIN_INPUTS.dualClipOn]: scalar(settings.dualClip === undefined ? 0 : 1),
      [TRAIN_INPUTS.klCoef]: scalar(settings.klCoef),
      [TRAIN_INPUTS.entropyCoef]: scalar(settings.entropyCoef),
      [TRAIN_INPUTS.nllCoef]: scalar(settings.nllCoef ?? 0),
    };
  }

  /**
   * Inputs of scoring/training: ids, next-token targets, RoPE, causal+padding bias, right-padded
   * [B, T], or with the completion window left-padded with per-token arrays [B, W].
   */
  private sequenceFeeds(sequences: readonly ScoredSequence[]): SequenceFeeds {
    const windowed = this.options.completionWindow;
    const full = sequences.map((s) => [...s.promptTokenIds, ...s.completionTokenIds].slice(0, -1));
    const padded = padBatch(full, windowed ? "left" : "right");
    const { batch, time } = padded;
    const width = windowed ? Math.max(1, ...sequences.map((s) => s.completionTokenIds.length)) : time;
    const column = windowed
      ? (b: number, j: number) => b * width + width - sequences[b]!.completionTokenIds.length + j
      : (b: number, j: number) => b * width + sequences[b]!.promptTokenIds.length - 1 + j;
    const targets = new BigInt64Array(batch * width);
    sequences.forEach((s, b) => {
      if (windowed) s.completionTokenIds.forEach((tok, j) => (targets[column(b, j)] = BigInt(tok)));
      else {
        const all = [...s.promptTokenIds, ...s.completionTokenIds];
        for (let t = 0; t + 1 < all.length; t++) targets[b * width + t] = BigInt(all[t + 1]!);
      }
    });
    const rope = ropeTables(padded.positions, this.config.head_dim, this.config.rope_theta, this.dtype);
    const D = this.config.head_dim;
    const bias = attentionBias(padded.valid, batch, 0, time, this.dtype);
    return {
      width,
      column,
      feeds: {
        input_ids: tensor("int64", padded.ids, [batch, time]),
        targets: tensor("int64", targets, [batch, width]),
        rope_cos: tensor(this.dtype, rope.cos, [batch, time, 1, D]),
        rope_sin: tensor(this.dtype, rope.sin, [batch, time, 1, D]),
        attn_bias: tensor(this.dtype, bias, [batch, 1, 1, time, time]),
      },
    };
  }

  /** Persistent output tensors for every `grad.<weight>` of the training graph (allocated once). */
  private gradientOutputs(): Record<string, ort.Tensor> {
    if (this.gradientBuffers === undefined) {
      this.gradientBuffers = {};
      for (const spec of this.weightSpecs) {
        const n = spec.shape.reduce((a, b) => a * b, 1);
        const data = floatArray(this.dtype, n);
        this.gradientBuffers[gradName(spec.name)] = tensor(this.dtype, data, spec.shape);
      }
    }
    return this.gradientBuffers;
  }

  async release(): Promise<void> {
    for (const arena of [this.scoring, this.train]) await arena.release();
    this.gradientBuffers = undefined;
  }
}

/**
 * Throws naming the sequence, the position and the id of the first token outside the `vocab` ids
 * the policy can produce (of `vocabSize` rows), or the first empty prompt.
 */
export function checkTokens(
  sequences: readonly ScoredSequence[],
  vocab: number,
  vocabSize: number,
  label: string,
): void {
  const vocabulary =
    vocab === vocabSize
      ? `the vocabulary (vocab_size ${vocab})`
      : `the tokenizer's vocabulary (${vocab} ids; vocab_size ${vocabSize})`;
  sequences.forEach((s, b) => {
    if (s.promptTokenIds.length === 0) throw new Error(`${label}: sequence ${b}: the prompt is empty`);
    const all = [...s.promptTokenIds, ...s.completionTokenIds];
    all.forEach((tok, i) => {
      if (!Number.isInteger(tok) || tok < 0 || tok >= vocab) {
        const where =
          i < s.promptTokenIds.length
            ? `prompt position ${i}`
            : `completion position ${i - s.promptTokenIds.length}`;
        throw new Error(`${label}: sequence ${b}: token id ${tok} at ${where} is outside ${vocabulary}`);
      }
    });
  });
}

/** Picks each sequence's completion positions out of a per-token output. */
function completionRows(
  out: ort.Tensor,
  sequences: readonly ScoredSequence[],
  column: (b: number, j: number) => number,
): number[][] {
  const data = out.data as FloatArray;
  return sequences.map((s, b) => Array.from(s.completionTokenIds, (_, j) => data[column(b, j)]!));
}
