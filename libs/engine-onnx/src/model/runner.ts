/**
 * Runs one model's graphs: lazily created ORT sessions (one per graph kind, reused for every call),
 * weights fed as ORT tensors that wrap the host arrays (no copy; an in-place optimizer update is
 * seen by the next run), and the host-side batching of sequences into padded tensors.
 */
import type { QwenConfig } from "@troupe/engine";
import type { FloatDType } from "../graph/builder.ts";
import { GraphSession, int64Tensor, type ort, tensor } from "../graph/session.ts";
import { fusedData, type GraphWeightSpec, graphWeightSpecs } from "./fused-weights.ts";
import {
  buildDecodeGraph,
  buildScoringGraph,
  buildTrainGraph,
  gradName,
  pastKeyName,
  pastValueName,
  presentKeyName,
  presentValueName,
  TRAIN_INPUTS,
} from "./graphs.ts";
import { attentionBias, padBatch, ropeTables } from "./host-inputs.ts";

export type FloatArray = Float32Array | Float64Array;

export interface HostTensor {
  readonly shape: readonly number[];
  readonly data: FloatArray;
}

export type HostWeights = ReadonlyMap<string, HostTensor>;

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

export interface LossSettings {
  readonly clipLow: number;
  readonly clipHigh: number;
  readonly dualClip?: number | undefined;
  readonly klCoef: number;
  readonly entropyCoef: number;
}

export interface MicroBatchResult {
  readonly loss: number;
  readonly pgLoss: number;
  readonly kl: number;
  readonly entropy: number;
  readonly clipped: number;
  readonly oldMinusNew: number;
  readonly logprobs: number[][];
  readonly entropies: number[][];
  readonly grads: Map<string, FloatArray>;
}

export class ModelRunner {
  private scoring?: Promise<GraphSession>;
  private decode?: Promise<GraphSession>;
  private train?: Promise<GraphSession>;
  /** Weight inputs of the scoring/training graphs (HF tensors) and of the decode graph (fused). */
  private readonly weightSpecs: readonly GraphWeightSpec[];
  private readonly decodeWeightSpecs: readonly GraphWeightSpec[];
  private gradientBuffers?: Record<string, ort.Tensor> | undefined;

  constructor(
    readonly config: QwenConfig,
    readonly dtype: FloatDType = "float32",
    readonly label = "model",
  ) {
    this.weightSpecs = graphWeightSpecs(config, false);
    this.decodeWeightSpecs = graphWeightSpecs(config, true);
  }

  private scoringSession(): Promise<GraphSession> {
    this.scoring ??= GraphSession.create(buildScoringGraph(this.config, this.dtype));
    return this.scoring;
  }
  private decodeSession(): Promise<GraphSession> {
    this.decode ??= GraphSession.create(buildDecodeGraph(this.config, this.dtype));
    return this.decode;
  }
  private trainSession(): Promise<GraphSession> {
    this.train ??= GraphSession.create(buildTrainGraph(this.config, this.dtype));
    return this.train;
  }

  /**
   * A graph's weight inputs as ORT tensors over the host arrays: no copy for plain tensors and
   * for packed fused groups (`packWeights`); unpacked groups are concatenated into a fresh array.
   */
  weightFeeds(
    weights: HostWeights,
    graph: "scoring" | "train" | "decode" = "scoring",
  ): Record<string, ort.Tensor> {
    const feeds: Record<string, ort.Tensor> = {};
    for (const [name, t] of weights) {
      if (t.data instanceof Float32Array !== (this.dtype === "float32")) {
        throw new Error(`${this.label}: weight ${name} is not ${this.dtype}`);
      }
    }
    for (const spec of graph === "decode" ? this.decodeWeightSpecs : this.weightSpecs) {
      const t = weights.get(spec.name);
      if (spec.group !== undefined)
        feeds[spec.name] = tensor(this.dtype, fusedData(spec.group, weights), spec.shape);
      else if (t === undefined) throw new Error(`${this.label}: missing weight ${spec.name}`);
      else feeds[spec.name] = tensor(this.dtype, t.data, t.shape);
    }
    return feeds;
  }

  /** Throws naming the sequence, the position and the id of the first token outside the vocabulary. */
  checkTokens(sequences: readonly ScoredSequence[]): void {
    const V = this.config.vocab_size;
    sequences.forEach((s, b) => {
      if (s.promptTokenIds.length === 0) throw new Error(`${this.label}: sequence ${b}: the prompt is empty`);
      const all = [...s.promptTokenIds, ...s.completionTokenIds];
      all.forEach((tok, i) => {
        if (!Number.isInteger(tok) || tok < 0 || tok >= V) {
          const where =
            i < s.promptTokenIds.length
              ? `prompt position ${i}`
              : `completion position ${i - s.promptTokenIds.length}`;
          throw new Error(
            `${this.label}: sequence ${b}: token id ${tok} at ${where} is outside the vocabulary (vocab_size ${V})`,
          );
        }
      });
    });
  }

  /** Right-padded inputs of scoring/training: ids, next-token targets, RoPE, causal+padding bias. */
  private sequenceFeeds(sequences: readonly ScoredSequence[]): {
    feeds: Record<string, ort.Tensor>;
    time: number;
  } {
    const full = sequences.map((s) => [...s.promptTokenIds, ...s.completionTokenIds].slice(0, -1));
    const padded = padBatch(full, "right");
    const { batch, time } = padded;
    const targets = new BigInt64Array(batch * time);
    sequences.forEach((s, b) => {
      const all = [...s.promptTokenIds, ...s.completionTokenIds];
      for (let t = 0; t + 1 < all.length; t++) targets[b * time + t] = BigInt(all[t + 1]!);
    });
    const rope = ropeTables(padded.positions, this.config.head_dim, this.config.rope_theta, this.dtype);
    const D = this.config.head_dim;
    return {
      time,
      feeds: {
        input_ids: tensor("int64", padded.ids, [batch, time]),
        targets: tensor("int64", targets, [batch, time]),
        rope_cos: tensor(this.dtype, rope.cos, [batch, time, 1, D]),
        rope_sin: tensor(this.dtype, rope.sin, [batch, time, 1, D]),
        attn_bias: tensor(this.dtype, attentionBias(padded.valid, batch, 0, time, this.dtype), [
          batch,
          1,
          1,
          time,
          time,
        ]),
      },
    };
  }

  /** Picks each sequence's completion positions out of a [B, T] output. */
  private completionRows(out: ort.Tensor, sequences: readonly ScoredSequence[], time: number): number[][] {
    const data = out.data as FloatArray;
    return sequences.map((s, b) => {
      const start = s.promptTokenIds.length - 1;
      return Array.from(s.completionTokenIds, (_, j) => data[b * time + start + j]!);
    });
  }

  async score(weights: HostWeights, sequences: readonly ScoredSequence[]): Promise<ScoreResult> {
    if (sequences.length === 0) return { logprobs: [], entropies: [] };
    this.checkTokens(sequences);
    const session = await this.scoringSession();
    const { feeds, time } = this.sequenceFeeds(sequences);
    const out = await session.run({ ...this.weightFeeds(weights), ...feeds });
    return {
      logprobs: this.completionRows(out.logprobs!, sequences, time),
      entropies: this.completionRows(out.entropy!, sequences, time),
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
    this.checkTokens(sequences);
    const session = await this.trainSession();
    const { feeds, time } = this.sequenceFeeds(sequences);
    const B = sequences.length;
    const perToken = (pick: (s: LossSequenceInput, j: number) => number) => {
      const data = this.dtype === "float32" ? new Float32Array(B * time) : new Float64Array(B * time);
      sequences.forEach((s, b) => {
        const start = s.promptTokenIds.length - 1;
        for (let j = 0; j < s.completionTokenIds.length; j++) data[b * time + start + j] = pick(s, j);
      });
      return tensor(this.dtype, data, [B, time]);
    };
    const scalar = (x: number) =>
      tensor(this.dtype, this.dtype === "float32" ? Float32Array.of(x) : Float64Array.of(x), []);
    const klOn = settings.klCoef !== 0;
    const lossFeeds: Record<string, ort.Tensor> = {
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
    };
    const out = await session.run(
      { ...this.weightFeeds(weights, "train"), ...feeds, ...lossFeeds },
      options.reuseGradientBuffers ? this.gradientOutputs() : undefined,
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
      logprobs: this.completionRows(out.logprobs!, sequences, time),
      entropies: this.completionRows(out.entropy!, sequences, time),
      grads,
    };
  }

  /** Persistent output tensors for every `grad.<weight>` of the training graph (allocated once). */
  private gradientOutputs(): Record<string, ort.Tensor> {
    if (this.gradientBuffers === undefined) {
      this.gradientBuffers = {};
      for (const spec of this.weightSpecs) {
        const n = spec.shape.reduce((a, b) => a * b, 1);
        const data = this.dtype === "float32" ? new Float32Array(n) : new Float64Array(n);
        this.gradientBuffers[gradName(spec.name)] = tensor(this.dtype, data, spec.shape);
      }
    }
    return this.gradientBuffers;
  }

  /**
   * An empty KV cache for a batch: [B, KV, 0, d_head] per layer. With a `capacity` (the longest
   * sequence the caller will decode), two buffers per cache tensor are allocated once and used in
   * turn: each step's `present_*` outputs are written by ORT straight into the buffer that does
   * not hold the step's `past_*` input, so no step allocates a cache or copies it through JS.
   */
  emptyCache(batch: number, capacity?: number): KvCache {
    const KV = this.config.num_key_value_heads;
    const D = this.config.head_dim;
    const L = this.config.num_hidden_layers;
    const alloc = (n: number) => (this.dtype === "float32" ? new Float32Array(n) : new Float64Array(n));
    const empty = () => tensor(this.dtype, alloc(0), [batch, KV, 0, D]);
    const buffers = () => ({
      keys: Array.from({ length: L }, () => alloc(batch * KV * capacity! * D)),
      values: Array.from({ length: L }, () => alloc(batch * KV * capacity! * D)),
    });
    return {
      length: 0,
      keys: Array.from({ length: L }, empty),
      values: Array.from({ length: L }, empty),
      storage:
        capacity === undefined
          ? undefined
          : {
              capacity,
              buffers: [buffers(), buffers()],
              current: 0,
              logits: alloc(batch * this.config.vocab_size),
            },
    };
  }

  /**
   * One decode step: T new tokens per row after the cached ones. `positions` [B·T] are the RoPE
   * positions of the new tokens, `keyValid` [B·(P + T)] marks real (non-pad) key columns.
   * Returns last-column logits [B, V] and the extended cache (ORT tensors fed back as-is). With
   * cache storage the logits array is reused by the next step.
   */
  async decodeStep(
    weights: HostWeights | Record<string, ort.Tensor>,
    ids: BigInt64Array,
    positions: Int32Array,
    keyValid: Uint8Array,
    cache: KvCache,
    batch: number,
  ): Promise<{ logits: FloatArray; cache: KvCache }> {
    const session = await this.decodeSession();
    const time = ids.length / batch;
    const D = this.config.head_dim;
    const KV = this.config.num_key_value_heads;
    const L = this.config.num_hidden_layers;
    const rope = ropeTables(positions, D, this.config.rope_theta, this.dtype);
    const S = cache.length + time;
    const feeds: Record<string, ort.Tensor> = {
      ...(weights instanceof Map
        ? this.weightFeeds(weights, "decode")
        : (weights as Record<string, ort.Tensor>)),
      input_ids: tensor("int64", ids, [batch, time]),
      rope_cos: tensor(this.dtype, rope.cos, [batch, time, 1, D]),
      rope_sin: tensor(this.dtype, rope.sin, [batch, time, 1, D]),
      attn_bias: tensor(this.dtype, attentionBias(keyValid, batch, cache.length, time, this.dtype), [
        batch,
        1,
        1,
        time,
        S,
      ]),
    };
    for (let i = 0; i < L; i++) {
      feeds[pastKeyName(i)] = cache.keys[i]!;
      feeds[pastValueName(i)] = cache.values[i]!;
    }
    const storage = cache.storage !== undefined && S <= cache.storage.capacity ? cache.storage : undefined;
    let into: Record<string, ort.Tensor> | undefined;
    if (storage !== undefined) {
      const target = storage.buffers[1 - storage.current]!;
      const dims = [batch, KV, S, D];
      const size = batch * KV * S * D;
      into = { logits: tensor(this.dtype, storage.logits, [batch, this.config.vocab_size]) };
      for (let i = 0; i < L; i++) {
        into[presentKeyName(i)] = tensor(this.dtype, target.keys[i]!.subarray(0, size), dims);
        into[presentValueName(i)] = tensor(this.dtype, target.values[i]!.subarray(0, size), dims);
      }
    }
    const out = await session.run(feeds, into);
    return {
      logits: out.logits!.data as FloatArray,
      cache: {
        length: S,
        keys: Array.from({ length: L }, (_, i) => out[presentKeyName(i)]!),
        values: Array.from({ length: L }, (_, i) => out[presentValueName(i)]!),
        storage: storage === undefined ? undefined : { ...storage, current: 1 - storage.current },
      },
    };
  }

  async release(): Promise<void> {
    for (const s of [this.scoring, this.decode, this.train]) if (s) await (await s).release();
    this.scoring = this.decode = this.train = undefined;
    this.gradientBuffers = undefined;
  }
}

export interface KvCache {
  /** Cached columns P. */
  readonly length: number;
  readonly keys: readonly ort.Tensor[];
  readonly values: readonly ort.Tensor[];
  /** Pre-allocated cache buffers (see `emptyCache`); without them ORT allocates every step. */
  readonly storage?: KvCacheStorage | undefined;
}

export interface KvCacheStorage {
  /** Longest sequence (cached + new columns) the buffers hold. */
  readonly capacity: number;
  /** Two sets of per-layer key/value buffers, [B·KV·capacity·d_head] each. */
  readonly buffers: readonly [KvBuffers, KvBuffers];
  /** Which set holds the current cache; the next step writes into the other. */
  readonly current: number;
  /** [B·V] logits of the last step (overwritten by the next). */
  readonly logits: FloatArray;
}

interface KvBuffers {
  readonly keys: readonly FloatArray[];
  readonly values: readonly FloatArray[];
}

export { int64Tensor };
