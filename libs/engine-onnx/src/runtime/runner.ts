/**
 * Runs one model's graphs (model/graphs.ts): lazily created ORT sessions (one per graph kind,
 * reused for every call), weights fed as ORT tensors that wrap the host arrays (no copy; an
 * in-place optimizer update is seen by the next run), the host-side batching of sequences into
 * padded tensors, and the decode steps over the KV caches of kv-cache.ts.
 */
import { type QwenConfig, qwenParameterCount } from "@troupe/engine";
import type { FloatDType, Graph } from "../graph/builder.ts";
import { fusedData, type GraphWeightSpec, graphWeightSpecs } from "../model/fused-weights.ts";
import {
  buildCachedDecodeGraph,
  buildDecodeGraph,
  buildScoringGraph,
  buildTrainGraph,
  cacheKeyName,
  cacheValueName,
  gradName,
  newKeyName,
  newValueName,
  pastKeyName,
  pastValueName,
  presentKeyName,
  presentValueName,
  TRAIN_INPUTS,
} from "../model/graphs.ts";
import { attentionBias, ropeTables } from "../model/host-inputs.ts";
import { BoundedSession } from "./arena.ts";
import { cachedAttentionBias, type FixedKvCache, type KvCache, type RaggedKvCache } from "./kv-cache.ts";
import { estimateGraphPeakBytes, ORT_OVERHEAD } from "./memory.ts";
import { padBatch } from "./padding.ts";
import { type FloatArray, GraphSession, type ort, tensor } from "./session.ts";

/**
 * Models up to this many parameters decode with the weights baked into the session (pre-packed by
 * ORT, rebuilt after each update). 64 M float32 parameters = 256 MB held a second time by ORT.
 */
export const DEFAULT_MAX_CONSTANT_PARAMETERS = 64_000_000;

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
  readonly nllCoef?: number | undefined;
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
  /** The sessions whose shapes change from run to run, each with an arena bounded by arena.ts. */
  private readonly scoring: BoundedSession;
  private readonly train: BoundedSession;
  private readonly cachedPrefill: BoundedSession;
  private decode?: Promise<GraphSession>;
  /** Weight inputs of the scoring/training graphs (HF tensors) and of the decode graph (fused). */
  private readonly weightSpecs: readonly GraphWeightSpec[];
  private readonly decodeWeightSpecs: readonly GraphWeightSpec[];
  private stepWithInputs?: Promise<GraphSession>;
  private bakedStep?: { weights: HostWeights; version: number; session: Promise<GraphSession> } | undefined;
  private gradientBuffers?: Record<string, ort.Tensor> | undefined;

  /** Built graphs (no sessions) whose liveness the memory estimates read, by kind. */
  private readonly estimateGraphs = new Map<string, Graph>();
  private readonly estimates = new Map<string, number>();

  /** Largest model (parameters) whose decode step session gets the weights baked in as constants. */
  readonly maxConstantParameters: number;
  /**
   * The training, scoring and prefill sessions allocate from ORT's CPU arena (arena.ts: 1.2–1.6×
   * faster than fresh pages). With `memoryArena` each of them keeps what its largest run took,
   * unbounded: whoever sets it plans every run under a share of the memory (see the engine option).
   * Without it (the default) the arenas are bounded together by `arenaBudgetBytes` (arena.ts):
   * idle arenas are released when a run needs the room, and a run too large for an arena runs
   * without one.
   */
  readonly memoryArena: boolean;
  /** What the arenas and one run may hold together (default unbounded); ignored with `memoryArena`. */
  readonly arenaBudgetBytes: number;
  /**
   * Ids the policy can produce (its tokenizer's vocabulary size; default vocab_size). Scoring and
   * training take the softmax over these only, as the sampler does, and reject other token ids.
   */
  readonly vocab: number;
  /**
   * Score and train with the windowed graphs (`ScoringOptions.window`): sequences left-padded, and
   * the last layer's queries, MLP and the output head run only on the trailing columns that
   * predict completion tokens; generation's prefill runs its last layer on the last column only.
   * The same logprobs, gradients and samples up to float rounding, for less work where prompts are
   * long next to completions (the games' prompts: ≈ 10× their answers).
   * Memory plans keep the full graph's estimate (an upper bound), so micro-batches split the same
   * way with it on or off.
   */
  readonly completionWindow: boolean;

  constructor(
    readonly config: QwenConfig,
    readonly dtype: FloatDType = "float32",
    readonly label = "model",
    options: {
      readonly maxConstantParameters?: number;
      readonly vocab?: number;
      readonly memoryArena?: boolean;
      readonly arenaBudgetBytes?: number;
      readonly completionWindow?: boolean;
    } = {},
  ) {
    this.maxConstantParameters = options.maxConstantParameters ?? DEFAULT_MAX_CONSTANT_PARAMETERS;
    this.memoryArena = options.memoryArena ?? false;
    this.arenaBudgetBytes = options.arenaBudgetBytes ?? Number.POSITIVE_INFINITY;
    if (!(this.arenaBudgetBytes > 0))
      throw new Error(`${label}: arenaBudgetBytes must be > 0, got ${this.arenaBudgetBytes}`);
    this.completionWindow = options.completionWindow ?? false;
    this.vocab = options.vocab ?? config.vocab_size;
    if (!Number.isInteger(this.vocab) || this.vocab < 1 || this.vocab > config.vocab_size)
      throw new Error(
        `${label}: vocab ${this.vocab} must be an integer in [1, vocab_size ${config.vocab_size}]`,
      );
    this.weightSpecs = graphWeightSpecs(config, false);
    this.decodeWeightSpecs = graphWeightSpecs(config, true);
    const graphOptions = { vocab: this.vocab, window: this.completionWindow };
    this.scoring = new BoundedSession(`${label} scoring`, () =>
      buildScoringGraph(config, dtype, graphOptions),
    );
    this.train = new BoundedSession(`${label} training`, () => buildTrainGraph(config, dtype, graphOptions));
    this.cachedPrefill = new BoundedSession(`${label} prefill`, () =>
      buildCachedDecodeGraph(config, dtype, { lastColumnOnly: this.completionWindow }),
    );
  }

  /** The arena sessions (diagnostics and tests: what each holds, how often it was created). */
  get arenaSessions(): Readonly<Record<"scoring" | "train" | "prefill", BoundedSession>> {
    return { scoring: this.scoring, train: this.train, prefill: this.cachedPrefill };
  }

  /** The bound the arenas of this runner's runs keep to (see `arenaBudgetBytes`). */
  private get arenaLimit(): number {
    return this.memoryArena ? Number.POSITIVE_INFINITY : this.arenaBudgetBytes;
  }

  private decodeSession(): Promise<GraphSession> {
    this.decode ??= GraphSession.create(buildDecodeGraph(this.config, this.dtype), {
      memoryArena: this.memoryArena,
    });
    return this.decode;
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

  /**
   * Estimated peak bytes of one run (activations, host inputs, ORT's overhead; not the weights)
   * that trains on, or scores, `rows` sequences padded to `tokens` tokens (prompt + completion).
   */
  runBytes(kind: "train" | "score", rows: number, tokens: number): number {
    // The graphs see every token but the last (it is only a target).
    return this.estimate(kind, { B: rows, T: Math.max(1, tokens - 1) });
  }

  /** `runBytes` of a run over these sequences (padded to the longest). */
  private sequencesBytes(kind: "train" | "score", sequences: readonly ScoredSequence[]): number {
    let longest = 0;
    for (const s of sequences)
      longest = Math.max(longest, s.promptTokenIds.length + s.completionTokenIds.length);
    return this.runBytes(kind, sequences.length, longest);
  }

  /**
   * Estimated peak bytes of generating for `rows` prompts, the longest of `promptTokens` tokens,
   * up to `maxTokens` new ones: the prefill run over the left-padded prompts, plus the KV cache
   * and logits the generation holds (the single-token steps after it are far smaller).
   */
  generateBytes(rows: number, promptTokens: number, maxTokens: number): number {
    const C = promptTokens + maxTokens;
    const { num_hidden_layers: L, num_key_value_heads: KV, head_dim: D, vocab_size: V } = this.config;
    const valueBytes = this.dtype === "float32" ? 4 : 8;
    const cache = rows * (2 * L * KV * C * D + V) * valueBytes + rows * C;
    return this.estimate("prefill", { B: rows, T: promptTokens, C }) + cache;
  }

  /**
   * Estimated peak bytes of one run on one sequence of `tokens` tokens (prompt + completion) —
   * training, scoring, and generating its last `maxTokens` of them — beyond the weights.
   */
  sequenceBytes(tokens: number, maxTokens: number): Record<"train" | "score" | "generate", number> {
    return {
      train: this.runBytes("train", 1, tokens),
      score: this.runBytes("score", 1, tokens),
      generate: this.generateBytes(1, Math.max(1, tokens - maxTokens), maxTokens),
    };
  }

  private estimate(kind: "train" | "score" | "prefill", dims: Readonly<Record<string, number>>): number {
    const key = `${kind}:${Object.values(dims).join(",")}`;
    let bytes = this.estimates.get(key);
    if (bytes === undefined) {
      let graph = this.estimateGraphs.get(kind);
      if (graph === undefined) {
        const vocab = { vocab: this.vocab };
        graph =
          kind === "train"
            ? buildTrainGraph(this.config, this.dtype, vocab)
            : kind === "score"
              ? buildScoringGraph(this.config, this.dtype, vocab)
              : buildCachedDecodeGraph(this.config, this.dtype);
        this.estimateGraphs.set(kind, graph);
      }
      bytes = Math.ceil(ORT_OVERHEAD * estimateGraphPeakBytes(graph, dims));
      // Keyed by shape: a run's plan asks the same few shapes many times.
      if (this.estimates.size > 4096) this.estimates.clear();
      this.estimates.set(key, bytes);
    }
    return bytes;
  }

  /** Throws naming the sequence, the position and the id of the first token outside the vocabulary. */
  checkTokens(sequences: readonly ScoredSequence[]): void {
    const V = this.vocab;
    const vocabulary =
      V === this.config.vocab_size
        ? `the vocabulary (vocab_size ${V})`
        : `the tokenizer's vocabulary (${V} ids; vocab_size ${this.config.vocab_size})`;
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
            `${this.label}: sequence ${b}: token id ${tok} at ${where} is outside ${vocabulary}`,
          );
        }
      });
    });
  }

  /**
   * Inputs of scoring/training: ids, next-token targets, RoPE, causal+padding bias. Right-padded,
   * per-token arrays [B, T] with sequence b's completion at columns [prompt − 1, …); or with
   * `completionWindow` left-padded, per-token arrays [B, W] (W the longest completion) with each
   * completion ending its row. `column(b, j)` is where completion token j of sequence b sits in a
   * per-token array of `width` columns.
   */
  private sequenceFeeds(sequences: readonly ScoredSequence[]): {
    feeds: Record<string, ort.Tensor>;
    width: number;
    column: (b: number, j: number) => number;
  } {
    const windowed = this.completionWindow;
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
    return {
      width,
      column,
      feeds: {
        input_ids: tensor("int64", padded.ids, [batch, time]),
        targets: tensor("int64", targets, [batch, width]),
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

  /** Picks each sequence's completion positions out of a per-token output. */
  private completionRows(
    out: ort.Tensor,
    sequences: readonly ScoredSequence[],
    column: (b: number, j: number) => number,
  ): number[][] {
    const data = out.data as FloatArray;
    return sequences.map((s, b) => Array.from(s.completionTokenIds, (_, j) => data[column(b, j)]!));
  }

  async score(weights: HostWeights, sequences: readonly ScoredSequence[]): Promise<ScoreResult> {
    if (sequences.length === 0) return { logprobs: [], entropies: [] };
    this.checkTokens(sequences);
    const { feeds, column } = this.sequenceFeeds(sequences);
    const out = await this.scoring.run(this.sequencesBytes("score", sequences), this.arenaLimit, (session) =>
      session.run({ ...this.weightFeeds(weights), ...feeds }),
    );
    return {
      logprobs: this.completionRows(out.logprobs!, sequences, column),
      entropies: this.completionRows(out.entropy!, sequences, column),
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
    const { feeds, width, column } = this.sequenceFeeds(sequences);
    const B = sequences.length;
    const perToken = (pick: (s: LossSequenceInput, j: number) => number) => {
      const data = this.dtype === "float32" ? new Float32Array(B * width) : new Float64Array(B * width);
      sequences.forEach((s, b) => {
        for (let j = 0; j < s.completionTokenIds.length; j++) data[column(b, j)] = pick(s, j);
      });
      return tensor(this.dtype, data, [B, width]);
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
      [TRAIN_INPUTS.nllCoef]: scalar(settings.nllCoef ?? 0),
    };
    const out = await this.train.run(this.sequencesBytes("train", sequences), this.arenaLimit, (session) =>
      session.run(
        { ...this.weightFeeds(weights, "train"), ...feeds, ...lossFeeds },
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
      logprobs: this.completionRows(out.logprobs!, sequences, column),
      entropies: this.completionRows(out.entropy!, sequences, column),
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
   * An empty growing KV cache for a batch, [B, KV, 0, d_head] per layer, for `decodeStep` (whose
   * graph appends each step's columns with a Concat). Generation uses `fixedCache` instead.
   */
  emptyCache(batch: number): KvCache {
    const KV = this.config.num_key_value_heads;
    const D = this.config.head_dim;
    const L = this.config.num_hidden_layers;
    const empty = () =>
      tensor(this.dtype, this.dtype === "float32" ? new Float32Array(0) : new Float64Array(0), [
        batch,
        KV,
        0,
        D,
      ]);
    return { length: 0, keys: Array.from({ length: L }, empty), values: Array.from({ length: L }, empty) };
  }

  /**
   * One decode step: T new tokens per row after the cached ones. `positions` [B·T] are the RoPE
   * positions of the new tokens, `keyValid` [B·(P + T)] marks real (non-pad) key columns.
   * Returns last-column logits [B, V] and the extended cache (ORT tensors fed back as-is; the
   * graph's Concat copies the whole cache every step, so generation uses `cachedDecodeStep`).
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
    const out = await session.run(feeds);
    return {
      logits: out.logits!.data as FloatArray,
      cache: {
        length: S,
        keys: Array.from({ length: L }, (_, i) => out[presentKeyName(i)]!),
        values: Array.from({ length: L }, (_, i) => out[presentValueName(i)]!),
      },
    };
  }

  /**
   * The session of a cached decode run. Several new tokens per row (the prefill) run the general
   * graph with the weights as inputs: its Gemms have a row per prompt token, so packing the
   * weights per call costs little. One new token per row (a step) runs the single-token graph;
   * with a `weightsVersion` (a number the owner of the weights changes whenever it updates them)
   * the step graph bakes the weights in as constants, which ORT pre-packs once, and is rebuilt
   * when the weights object or the version changes, so at most once per optimizer step. Models
   * above `maxConstantParameters` keep the weights as inputs: a baked session holds its own copy
   * of them (and a pre-packed one), and rebuilding costs more.
   */
  private async cachedDecodeSession(
    weights: HostWeights,
    singleToken: boolean,
    weightsVersion: number | undefined,
  ): Promise<{ session: GraphSession | BoundedSession; baked: boolean }> {
    if (!singleToken) return { session: this.cachedPrefill, baked: false };
    const bake =
      weightsVersion !== undefined && qwenParameterCount(this.config) <= this.maxConstantParameters;
    if (!bake) {
      this.stepWithInputs ??= GraphSession.create(
        buildCachedDecodeGraph(this.config, this.dtype, { singleToken: true }),
        { memoryArena: true },
      );
      return { session: await this.stepWithInputs, baked: false };
    }
    const previous = this.bakedStep;
    if (previous === undefined || previous.weights !== weights || previous.version !== weightsVersion) {
      // The replaced session has no run in flight: calls on one model are serialised by the engine.
      if (previous !== undefined) await (await previous.session).release();
      const session = GraphSession.create(
        buildCachedDecodeGraph(this.config, this.dtype, { singleToken: true, constantWeights: weights }),
        { memoryArena: true },
      );
      this.bakedStep = { weights, version: weightsVersion, session };
      this.bakedSessionsBuilt++;
    }
    return { session: await this.bakedStep!.session, baked: true };
  }

  /** How many baked-weights decode sessions were built (tests check that a rebuild happens only on change). */
  bakedSessionsBuilt = 0;

  /**
   * An empty pre-allocated KV cache for `batch` rows of up to `capacity` columns (prompt + new
   * tokens): per layer [B, KV, capacity, d_head] key and value arrays, filled column by column.
   */
  fixedCache(batch: number, capacity: number): FixedKvCache {
    return { batch, capacity, length: 0, ...this.cacheArrays(batch, capacity) };
  }

  /** A float array of the runner's dtype. */
  private allocFloat(n: number): FloatArray {
    return this.dtype === "float32" ? new Float32Array(n) : new Float64Array(n);
  }

  /** The arrays of a pre-allocated cache of `rows` × `capacity` columns: per layer [rows, KV, capacity, d_head]. */
  private cacheArrays(rows: number, capacity: number) {
    const size = rows * this.config.num_key_value_heads * capacity * this.config.head_dim;
    const layers = this.config.num_hidden_layers;
    return {
      keys: Array.from({ length: layers }, () => this.allocFloat(size)),
      values: Array.from({ length: layers }, () => this.allocFloat(size)),
      valid: new Uint8Array(rows * capacity),
      logits: this.allocFloat(rows * this.config.vocab_size),
    };
  }

  /**
   * Runs one step of a cached-decode session: T new tokens for each of B rows over caches of C
   * columns (per layer `keys`/`values`, [B, KV, C, d_head]); the logits land in `logits` [B·V];
   * returns the run's outputs, whose new keys/values [B, KV, T, d_head] the caller writes back.
   */
  private async runCachedStep(
    step: { readonly session: GraphSession | BoundedSession; readonly baked: boolean },
    weights: HostWeights,
    ids: BigInt64Array,
    positions: Int32Array,
    bias: FloatArray,
    shape: { readonly B: number; readonly T: number; readonly C: number },
    cache: {
      readonly keys: readonly FloatArray[];
      readonly values: readonly FloatArray[];
      readonly logits: FloatArray;
    },
  ): Promise<Record<string, ort.Tensor>> {
    const { B, T, C } = shape;
    const D = this.config.head_dim;
    const KV = this.config.num_key_value_heads;
    const L = this.config.num_hidden_layers;
    const rope = ropeTables(positions, D, this.config.rope_theta, this.dtype);
    const feeds: Record<string, ort.Tensor> = {
      ...(step.baked ? {} : this.weightFeeds(weights, "decode")),
      input_ids: tensor("int64", ids, [B, T]),
      rope_cos: tensor(this.dtype, rope.cos, [B, T, 1, D]),
      rope_sin: tensor(this.dtype, rope.sin, [B, T, 1, D]),
      attn_bias: tensor(this.dtype, bias, [B, 1, 1, T, C + T]),
    };
    const kvDims = [B, KV, C, D];
    for (let i = 0; i < L; i++) {
      feeds[cacheKeyName(i)] = tensor(this.dtype, cache.keys[i]!, kvDims);
      feeds[cacheValueName(i)] = tensor(this.dtype, cache.values[i]!, kvDims);
    }
    const newDims = [B, KV, T, D];
    const into: Record<string, ort.Tensor> = {
      logits: tensor(this.dtype, cache.logits, [B, this.config.vocab_size]),
    };
    for (let i = 0; i < L; i++) {
      into[newKeyName(i)] = tensor(this.dtype, this.allocFloat(B * KV * T * D), newDims);
      into[newValueName(i)] = tensor(this.dtype, this.allocFloat(B * KV * T * D), newDims);
    }
    const run = (session: GraphSession) => session.run(feeds, into);
    // A prefill's session (several tokens per row) keeps a bounded arena; the step's is small.
    return step.session instanceof BoundedSession
      ? await step.session.run(this.estimate("prefill", { B, T, C }), this.arenaLimit, run)
      : await run(step.session);
  }

  /**
   * One decode step over a pre-allocated cache: T new tokens per row (`ids` [B·T], RoPE `positions`
   * [B·T], `valid` [B·T] 1 for a real token) after the cache's `length` columns. The graph returns
   * the new tokens' keys/values, which are written into the cache at column `length` (a copy of
   * B·KV·T·d_head values per layer, instead of the whole cache); the cache's length grows by T.
   * Returns the last column's logits [B·V] (the cache's logits array, overwritten by the next step).
   */
  async cachedDecodeStep(
    weights: HostWeights,
    ids: BigInt64Array,
    positions: Int32Array,
    valid: Uint8Array,
    cache: FixedKvCache,
    options: { readonly weightsVersion?: number | undefined } = {},
  ): Promise<FloatArray> {
    const B = cache.batch;
    const T = ids.length / B;
    const C = cache.capacity;
    const P = cache.length;
    if (!Number.isInteger(T) || T < 1 || positions.length !== B * T || valid.length !== B * T)
      throw new Error(`${this.label}: cachedDecodeStep: ids, positions and valid must all be [${B}, T]`);
    if (P + T > C)
      throw new Error(`${this.label}: cachedDecodeStep: ${P} cached + ${T} new columns exceed capacity ${C}`);
    const step = await this.cachedDecodeSession(weights, T === 1, options.weightsVersion);
    const D = this.config.head_dim;
    const KV = this.config.num_key_value_heads;
    const L = this.config.num_hidden_layers;
    const bias = cachedAttentionBias(cache, valid, T, this.dtype);
    const out = await this.runCachedStep(step, weights, ids, positions, bias, { B, T, C }, cache);
    // Write the new columns: row (b, kv) of the cache holds C columns of D values.
    for (let i = 0; i < L; i++) {
      for (const [news, store] of [
        [out[newKeyName(i)]!.data as FloatArray, cache.keys[i]!],
        [out[newValueName(i)]!.data as FloatArray, cache.values[i]!],
      ] as const) {
        for (let r = 0; r < B * KV; r++)
          store.set(news.subarray(r * T * D, (r + 1) * T * D), (r * C + P) * D);
      }
    }
    for (let b = 0; b < B; b++) cache.valid.set(valid.subarray(b * T, (b + 1) * T), b * C + P);
    cache.length = P + T;
    return cache.logits;
  }

  /**
   * The prefill of B prompts with nothing cached: T tokens per row (`ids`, `positions`, `valid` [B·T],
   * left-padded) attend only to each other — the cached-decode graph over a past of zero columns —
   * and their keys/values come back as the graph returns them, per layer [B, KV, T, d_head], for the
   * caller to place (continuous batching copies each row into its own row of the ragged cache).
   * A prefill into a cache of T columns (`cachedDecodeStep` on a fresh `fixedCache(B, T)`) gives the
   * same tokens with twice the attention: its scores span the T empty cache columns, masked, too.
   */
  async prefill(
    weights: HostWeights,
    ids: BigInt64Array,
    positions: Int32Array,
    valid: Uint8Array,
    batch: number,
    options: { readonly weightsVersion?: number | undefined } = {},
  ): Promise<{ logits: FloatArray; keys: FloatArray[]; values: FloatArray[] }> {
    const B = batch;
    const T = ids.length / B;
    if (!Number.isInteger(T) || T < 1 || positions.length !== B * T || valid.length !== B * T)
      throw new Error(`${this.label}: prefill: ids, positions and valid must all be [${B}, T]`);
    const step = await this.cachedDecodeSession(weights, T === 1, options.weightsVersion);
    const empty = this.cacheArrays(B, 0);
    const bias = cachedAttentionBias(
      { batch: B, capacity: 0, length: 0, valid: empty.valid },
      valid,
      T,
      this.dtype,
    );
    const out = await this.runCachedStep(step, weights, ids, positions, bias, { B, T, C: 0 }, empty);
    const L = this.config.num_hidden_layers;
    return {
      logits: empty.logits,
      keys: Array.from({ length: L }, (_, i) => out[newKeyName(i)]!.data as FloatArray),
      values: Array.from({ length: L }, (_, i) => out[newValueName(i)]!.data as FloatArray),
    };
  }

  /**
   * One single-token decode step over the first `ids.length` rows of a ragged cache, whose rows
   * each hold one sequence at its own length (continuous batching: sequences join and leave
   * between steps). The step attends over all `capacity` columns, masked by each row's `valid`
   * flags, and writes row b's new keys/values at its own column `lengths[b]`, which then grows by
   * one. Returns the logits [B·V] (an array of the cache, overwritten by the next step).
   */
  async raggedDecodeStep(
    weights: HostWeights,
    ids: BigInt64Array,
    positions: Int32Array,
    cache: RaggedKvCache,
    options: { readonly weightsVersion?: number | undefined } = {},
  ): Promise<FloatArray> {
    const B = ids.length;
    const C = cache.capacity;
    if (B < 1 || B > cache.rows || positions.length !== B)
      throw new Error(`${this.label}: raggedDecodeStep: ids and positions must be [B ≤ ${cache.rows}]`);
    for (let b = 0; b < B; b++) {
      if (cache.lengths[b]! >= C)
        throw new Error(`${this.label}: raggedDecodeStep: row ${b} is full (${C} columns)`);
    }
    const step = await this.cachedDecodeSession(weights, true, options.weightsVersion);
    const D = this.config.head_dim;
    const KV = this.config.num_key_value_heads;
    const L = this.config.num_hidden_layers;
    const V = this.config.vocab_size;
    // Every cached column is "past" here (length C): the row's valid flags mask the unwritten ones.
    const bias = cachedAttentionBias(
      { batch: B, capacity: C, length: C, valid: cache.valid },
      new Uint8Array(B).fill(1),
      1,
      this.dtype,
    );
    // Rows are the outermost dimension: the first B rows are a prefix of each array (no copy).
    const rowValues = KV * C * D;
    const out = await this.runCachedStep(
      step,
      weights,
      ids,
      positions,
      bias,
      { B, T: 1, C },
      {
        keys: cache.keys.map((k) => k.subarray(0, B * rowValues)),
        values: cache.values.map((v) => v.subarray(0, B * rowValues)),
        logits: cache.logits.subarray(0, B * V),
      },
    );
    for (let i = 0; i < L; i++) {
      for (const [news, store] of [
        [out[newKeyName(i)]!.data as FloatArray, cache.keys[i]!],
        [out[newValueName(i)]!.data as FloatArray, cache.values[i]!],
      ] as const) {
        for (let b = 0; b < B; b++) {
          const column = cache.lengths[b]!;
          for (let h = 0; h < KV; h++)
            store.set(news.subarray((b * KV + h) * D, (b * KV + h + 1) * D), ((b * KV + h) * C + column) * D);
        }
      }
    }
    for (let b = 0; b < B; b++) cache.valid[b * C + cache.lengths[b]!++] = 1;
    return cache.logits.subarray(0, B * V);
  }

  /** An empty ragged cache of `rows` rows × `capacity` columns (see `RaggedKvCache`). */
  raggedCache(rows: number, capacity: number): RaggedKvCache {
    return { rows, capacity, lengths: new Int32Array(rows), ...this.cacheArrays(rows, capacity) };
  }

  async release(): Promise<void> {
    for (const arena of [this.scoring, this.train, this.cachedPrefill]) await arena.release();
    for (const s of [this.decode, this.stepWithInputs, this.bakedStep?.session])
      if (s) await (await s).release();
    this.decode = this.stepWithInputs = undefined;
    this.bakedStep = undefined;
    this.gradientBuffers = undefined;
  }
}
