/**
 * The decoder of one model: runs the cached-decode graphs (model/graphs.ts) over the pre-allocated
 * KV caches of kv-cache.ts. Two sessions:
 *
 *   prefill  several new tokens per row (dynamic T), the weights as inputs (its Gemms have a row
 *            per prompt token, so packing the weights per call costs little), an arena bounded by
 *            arena.ts and the model's memory plan
 *   step     one new token per row: the single-token graph; with a `weightsVersion` (a number the
 *            owner of the weights changes whenever it updates them) the weights are baked in as
 *            constants, which ORT pre-packs once, and the session is rebuilt when the weights
 *            object or the version changes, so at most once per optimizer step. Models above
 *            `maxConstantParameters` keep the weights as inputs: a baked session holds its own
 *            copy of them (and a pre-packed one), and rebuilding costs more.
 *
 * Each run returns only the new tokens' keys/values, which are written into the cache (a copy of
 * B·KV·T·d_head values per layer, never the whole cache).
 */
import { type QwenConfig, qwenParameterCount } from "@troupe/engine";
import type { FloatDType } from "../graph/builder.ts";
import { graphWeightSpecs } from "../model/fused-weights.ts";
import {
  buildCachedDecodeGraph,
  cacheKeyName,
  cacheValueName,
  newKeyName,
  newValueName,
} from "../model/graphs.ts";
import { floatArray, ropeTables } from "../model/host-inputs.ts";
import { BoundedSession } from "./arena.ts";
import {
  appendColumns,
  appendRaggedColumns,
  type CacheDims,
  cacheDims,
  cachedAttentionBias,
  type FixedKvCache,
  fixedCache,
  type NewColumns,
  type RaggedKvCache,
  raggedCache,
} from "./kv-cache.ts";
import type { MemoryPlan } from "./memory-plan.ts";
import { type FloatArray, GraphSession, type ort, tensor } from "./session.ts";
import { type HostWeights, weightFeeds } from "./weight-feeds.ts";

/**
 * Models up to this many parameters decode with the weights baked into the session (pre-packed by
 * ORT, rebuilt after each update). 64 M float32 parameters = 256 MB held a second time by ORT.
 */
export const DEFAULT_MAX_CONSTANT_PARAMETERS = 64_000_000;

/** The session of one cached-decode run, and whether its weights are baked in. */
interface DecodeSession {
  readonly session: GraphSession | BoundedSession;
  readonly baked: boolean;
}

/** The tokens of one cached-decode run: `ids` and RoPE `positions` [B·T], the bias [B, 1, 1, T, C + T]. */
interface StepInputs {
  readonly ids: BigInt64Array;
  readonly positions: Int32Array;
  readonly bias: FloatArray;
  readonly shape: { readonly B: number; readonly T: number; readonly C: number };
}

export class DecodeRunner {
  readonly prefillSession: BoundedSession;
  private stepWithInputs?: Promise<GraphSession>;
  private bakedStep?: { weights: HostWeights; version: number; session: Promise<GraphSession> } | undefined;
  /** The weight inputs of the decode graphs: fused q/k/v and gate/up groups. */
  private readonly weightSpecs;
  private readonly cacheDims: CacheDims;
  /** How many baked-weights step sessions were built (tests check that a rebuild happens only on change). */
  bakedSessionsBuilt = 0;

  readonly config: QwenConfig;
  readonly dtype: FloatDType;

  /** The model (its config and float type) is the memory plan's. */
  constructor(
    private readonly plan: MemoryPlan,
    readonly label: string,
    private readonly options: {
      /** Largest model (parameters) whose step session gets the weights baked in. */
      readonly maxConstantParameters: number;
      /** Let the step sessions' arenas keep what they took (they are small). */
      readonly arenaLimit: number;
    },
  ) {
    const { config, dtype } = plan;
    this.config = config;
    this.dtype = dtype;
    this.weightSpecs = graphWeightSpecs(config, true);
    this.cacheDims = cacheDims(config, dtype);
    this.prefillSession = new BoundedSession(`${label} prefill`, () =>
      // Only the last column's logits are read: the last layer runs its queries, MLP and final norm
      // there alone (every column's keys and values still go to the cache): ≈ 1/5 of a 4-layer
      // prefill's arithmetic saved, the same tokens (its logits equal up to float rounding).
      buildCachedDecodeGraph(config, dtype, { lastColumnOnly: true }),
    );
  }

  /** An empty pre-allocated cache of `batch` rows × `capacity` columns (prompt + new tokens). */
  fixedCache(batch: number, capacity: number): FixedKvCache {
    return fixedCache(this.cacheDims, batch, capacity);
  }

  /** An empty ragged cache of `rows` rows × `capacity` columns (continuous batching). */
  raggedCache(rows: number, capacity: number): RaggedKvCache {
    return raggedCache(this.cacheDims, rows, capacity);
  }

  /**
   * One decode step over a pre-allocated cache: T new tokens per row (`ids` [B·T], RoPE `positions`
   * [B·T], `valid` [B·T] 1 for a real token) after the cache's `length` columns, written into the
   * cache at column `length`; the cache's length grows by T. Returns the last column's logits
   * [B·V] (the cache's logits array, overwritten by the next step).
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
    const session = await this.session(weights, T === 1, options.weightsVersion);
    const bias = cachedAttentionBias(cache, valid, T, this.dtype);
    const news = await this.run(session, weights, { ids, positions, bias, shape: { B, T, C } }, cache);
    appendColumns(cache, news, valid, this.config.head_dim);
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
    const session = await this.session(weights, T === 1, options.weightsVersion);
    const empty = this.fixedCache(B, 0);
    const bias = cachedAttentionBias(empty, valid, T, this.dtype);
    const news = await this.run(session, weights, { ids, positions, bias, shape: { B, T, C: 0 } }, empty);
    return { logits: empty.logits, keys: [...news.keys], values: [...news.values] };
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
    const session = await this.session(weights, true, options.weightsVersion);
    // Every cached column is "past" here (length C): the row's valid flags mask the unwritten ones.
    const bias = cachedAttentionBias(
      { batch: B, capacity: C, length: C, valid: cache.valid },
      new Uint8Array(B).fill(1),
      1,
      this.dtype,
    );
    // Rows are the outermost dimension: the first B rows are a prefix of each array (no copy).
    const rowValues = this.config.num_key_value_heads * C * this.config.head_dim;
    const V = this.config.vocab_size;
    const rows = {
      keys: cache.keys.map((k) => k.subarray(0, B * rowValues)),
      values: cache.values.map((v) => v.subarray(0, B * rowValues)),
      logits: cache.logits.subarray(0, B * V),
    };
    const news = await this.run(session, weights, { ids, positions, bias, shape: { B, T: 1, C } }, rows);
    appendRaggedColumns(cache, news, B, this.config.head_dim);
    return rows.logits;
  }

  /** The session of a cached decode run: the prefill's for several tokens a row, else the step's. */
  private async session(
    weights: HostWeights,
    singleToken: boolean,
    weightsVersion: number | undefined,
  ): Promise<DecodeSession> {
    if (!singleToken) return { session: this.prefillSession, baked: false };
    const bake =
      weightsVersion !== undefined && qwenParameterCount(this.config) <= this.options.maxConstantParameters;
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

  /**
   * Runs one cached-decode run: T new tokens for each of B rows over caches of C columns (per
   * layer `keys`/`values`, [B, KV, C, d_head]); the logits land in `cache.logits` [B·V]. Returns
   * the new keys/values [B, KV, T, d_head] per layer, for the caller to write back.
   */
  private async run(
    step: DecodeSession,
    weights: HostWeights,
    inputs: StepInputs,
    cache: {
      readonly keys: readonly FloatArray[];
      readonly values: readonly FloatArray[];
      readonly logits: FloatArray;
    },
  ): Promise<NewColumns> {
    const { B, T, C } = inputs.shape;
    const D = this.config.head_dim;
    const KV = this.config.num_key_value_heads;
    const L = this.config.num_hidden_layers;
    const rope = ropeTables(inputs.positions, D, this.config.rope_theta, this.dtype);
    const feeds: Record<string, ort.Tensor> = {
      ...(step.baked ? {} : weightFeeds(weights, this.weightSpecs, this.dtype, this.label)),
      input_ids: tensor("int64", inputs.ids, [B, T]),
      rope_cos: tensor(this.dtype, rope.cos, [B, T, 1, D]),
      rope_sin: tensor(this.dtype, rope.sin, [B, T, 1, D]),
      attn_bias: tensor(this.dtype, inputs.bias, [B, 1, 1, T, C + T]),
    };
    const kvDims = [B, KV, C, D];
    for (let i = 0; i < L; i++) {
      feeds[cacheKeyName(i)] = tensor(this.dtype, cache.keys[i]!, kvDims);
      feeds[cacheValueName(i)] = tensor(this.dtype, cache.values[i]!, kvDims);
    }
    const news: NewColumns = {
      keys: Array.from({ length: L }, () => floatArray(this.dtype, B * KV * T * D)),
      values: Array.from({ length: L }, () => floatArray(this.dtype, B * KV * T * D)),
    };
    const into: Record<string, ort.Tensor> = {
      logits: tensor(this.dtype, cache.logits, [B, this.config.vocab_size]),
    };
    for (let i = 0; i < L; i++) {
      into[newKeyName(i)] = tensor(this.dtype, news.keys[i]!, [B, KV, T, D]);
      into[newValueName(i)] = tensor(this.dtype, news.values[i]!, [B, KV, T, D]);
    }
    const run = (session: GraphSession) => session.run(feeds, into);
    // A prefill's session (several tokens per row) keeps a bounded arena; the step's is small.
    if (step.session instanceof BoundedSession)
      await step.session.run(this.plan.estimate("prefill", { B, T, C }), this.options.arenaLimit, run);
    else await run(step.session);
    return news;
  }

  async release(): Promise<void> {
    await this.prefillSession.release();
    for (const s of [this.stepWithInputs, this.bakedStep?.session]) if (s) await (await s).release();
    this.stepWithInputs = undefined;
    this.bakedStep = undefined;
  }
}
