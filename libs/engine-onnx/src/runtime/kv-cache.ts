/**
 * The KV caches of decoding as the host keeps them, how they are allocated and how a step's new
 * keys/values are written into them, and the attention bias of a step over a pre-allocated cache:
 *
 *   FixedKvCache   one pre-allocated [B, KV, capacity, d_head] array per layer and kind, filled
 *                  column by column (batched generation)
 *   RaggedKvCache  the same arrays with one sequence per row, each at its own length (continuous
 *                  batching)
 *
 * Graph-side, the cached decode graph reads the cache as it is and returns only the new tokens'
 * keys/values (model/graphs.ts); the decode runner (decode-runner.ts) writes those into the arrays.
 */
import type { QwenConfig } from "@troupe/engine";
import type { FloatDType } from "../graph/builder.ts";
import { floatArray, MASKED_BIAS } from "../model/host-inputs.ts";
import type { FloatArray } from "./session.ts";

/** What a cache's arrays are sized by. */
export interface CacheDims {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
  /** Logits per row (vocab_size). */
  readonly vocab: number;
  readonly dtype: FloatDType;
}

export function cacheDims(config: QwenConfig, dtype: FloatDType): CacheDims {
  return {
    layers: config.num_hidden_layers,
    kvHeads: config.num_key_value_heads,
    headDim: config.head_dim,
    vocab: config.vocab_size,
    dtype,
  };
}

/** The arrays of a cache of `rows` × `capacity` columns: per layer [rows, KV, capacity, d_head]. */
function cacheArrays(dims: CacheDims, rows: number, capacity: number) {
  const size = rows * dims.kvHeads * capacity * dims.headDim;
  return {
    keys: Array.from({ length: dims.layers }, () => floatArray(dims.dtype, size)),
    values: Array.from({ length: dims.layers }, () => floatArray(dims.dtype, size)),
    valid: new Uint8Array(rows * capacity),
    logits: floatArray(dims.dtype, rows * dims.vocab),
  };
}

/**
 * An empty pre-allocated KV cache for `batch` rows of up to `capacity` columns (prompt + new
 * tokens): per layer [B, KV, capacity, d_head] key and value arrays, filled column by column.
 */
export function fixedCache(dims: CacheDims, batch: number, capacity: number): FixedKvCache {
  return { batch, capacity, length: 0, ...cacheArrays(dims, batch, capacity) };
}

/** An empty ragged cache of `rows` rows × `capacity` columns (see `RaggedKvCache`). */
export function raggedCache(dims: CacheDims, rows: number, capacity: number): RaggedKvCache {
  return { rows, capacity, lengths: new Int32Array(rows), ...cacheArrays(dims, rows, capacity) };
}

/** Per layer the new tokens' keys and values [B, KV, T, d_head], as a cached decode run returns them. */
export interface NewColumns {
  readonly keys: readonly FloatArray[];
  readonly values: readonly FloatArray[];
}

/**
 * Writes T new columns per row at column `length` of a fixed cache (a copy of B·KV·T·d_head
 * values per layer, instead of the whole cache) with their valid flags ([B·T]); the length grows by T.
 */
export function appendColumns(
  cache: FixedKvCache,
  news: NewColumns,
  valid: Uint8Array,
  headDim: number,
): void {
  const B = cache.batch;
  const C = cache.capacity;
  const P = cache.length;
  const T = valid.length / B;
  const D = headDim;
  // Row (b, kv) of the cache holds C columns of D values; of the new ones, T columns.
  for (let i = 0; i < cache.keys.length; i++) {
    for (const [from, store] of [
      [news.keys[i]!, cache.keys[i]!],
      [news.values[i]!, cache.values[i]!],
    ] as const) {
      const rowHeads = from.length / (T * D);
      for (let r = 0; r < rowHeads; r++)
        store.set(from.subarray(r * T * D, (r + 1) * T * D), (r * C + P) * D);
    }
  }
  for (let b = 0; b < B; b++) cache.valid.set(valid.subarray(b * T, (b + 1) * T), b * C + P);
  cache.length = P + T;
}

/**
 * Writes one new column for each of the first B rows of a ragged cache, row b's at its own column
 * `lengths[b]`, which then grows by one.
 */
export function appendRaggedColumns(
  cache: RaggedKvCache,
  news: NewColumns,
  batch: number,
  headDim: number,
): void {
  const C = cache.capacity;
  const D = headDim;
  const KV = news.keys[0]!.length / (batch * D);
  for (let i = 0; i < cache.keys.length; i++) {
    for (const [from, store] of [
      [news.keys[i]!, cache.keys[i]!],
      [news.values[i]!, cache.values[i]!],
    ] as const) {
      for (let b = 0; b < batch; b++) {
        const column = cache.lengths[b]!;
        for (let h = 0; h < KV; h++)
          store.set(from.subarray((b * KV + h) * D, (b * KV + h + 1) * D), ((b * KV + h) * C + column) * D);
      }
    }
  }
  for (let b = 0; b < batch; b++) cache.valid[b * C + cache.lengths[b]!++] = 1;
}

/**
 * Attention bias [B, 1, 1, T, C + T] of a cached step: query t of row b sees cache column s < P
 * iff that column holds a real token, no cache column ≥ P (not written yet), and new column j ≤ t
 * iff token j is real (causal among the new tokens).
 */
export function cachedAttentionBias(
  cache: Pick<FixedKvCache, "batch" | "capacity" | "length" | "valid">,
  valid: Uint8Array,
  time: number,
  dtype: FloatDType,
): FloatArray {
  const { batch: B, capacity: C, length: P } = cache;
  const S = C + time;
  const out = floatArray(dtype, B * time * S);
  out.fill(MASKED_BIAS);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < time; t++) {
      const row = (b * time + t) * S;
      for (let s = 0; s < P; s++) if (cache.valid[b * C + s] === 1) out[row + s] = 0;
      for (let j = 0; j <= t; j++) if (valid[b * time + j] === 1) out[row + C + j] = 0;
    }
  }
  return out;
}

/**
 * The arrays of a pre-allocated KV cache, fixed or ragged: rows (a batch's sequences) are the
 * outermost dimension of each, so a row is one contiguous block.
 */
export interface KvCacheArrays {
  /** Columns the arrays hold. */
  readonly capacity: number;
  /** Per layer [rows, KV, capacity, d_head]. */
  readonly keys: readonly FloatArray[];
  readonly values: readonly FloatArray[];
  /** [rows, capacity]: 1 where the column holds a real (non-pad) token. */
  readonly valid: Uint8Array;
  /** [rows·V] logits of the last step. */
  readonly logits: FloatArray;
}

/** A pre-allocated KV cache (see `fixedCache`); `DecodeRunner.cachedDecodeStep` fills it in place. */
export interface FixedKvCache extends KvCacheArrays {
  /** Rows: B. */
  readonly batch: number;
  /** Columns filled so far, the same in every row. */
  length: number;
}

/**
 * The KV cache of continuous batching: per layer [rows, KV, capacity, d_head], one row per
 * sequence, each filled up to its own `lengths[row]` columns (a row's `valid` flags mark its real
 * tokens, left pads excluded). The scheduler moves rows (a sequence joins, another leaves); the
 * decode runner only appends one column per row and step (`DecodeRunner.raggedDecodeStep`).
 */
export interface RaggedKvCache extends KvCacheArrays {
  readonly rows: number;
  /** Columns filled so far, per row. */
  readonly lengths: Int32Array;
}

/**
 * Copies row `from` of a pre-allocated cache (fixed or ragged: rows are the outermost dimension
 * of its keys, values and valid flags) over row `to`.
 */
export function copyCacheRow(cache: Omit<KvCacheArrays, "logits">, from: number, to: number): void {
  const C = cache.capacity;
  const rowValues = (cache.keys[0]!.length * C) / cache.valid.length;
  for (const arrays of [cache.keys, cache.values])
    for (const a of arrays) a.copyWithin(to * rowValues, from * rowValues, (from + 1) * rowValues);
  cache.valid.copyWithin(to * C, from * C, (from + 1) * C);
}

/**
 * Copies `count` rows of keys and values whose rows hold `columns` columns (per layer
 * [rows, KV, columns, d_head]: what `DecodeRunner.prefill` returns, or a smaller cache) into columns
 * [0, columns) of rows `to`… of a pre-allocated cache with at least as many columns (fixed or
 * ragged: per layer [rows, KV, capacity, d_head]), starting at source row `from`. Valid flags and
 * lengths are the caller's.
 */
export function copyRows(
  cache: Pick<FixedKvCache, "keys" | "values" | "capacity">,
  source: { readonly keys: readonly FloatArray[]; readonly values: readonly FloatArray[] },
  shape: { readonly columns: number; readonly kvHeads: number; readonly headDim: number },
  rows: { readonly from: number; readonly to: number; readonly count: number },
): void {
  const { columns: S, kvHeads: KV, headDim: D } = shape;
  const C = cache.capacity;
  for (let i = 0; i < cache.keys.length; i++) {
    for (const [from, to] of [
      [source.keys[i]!, cache.keys[i]!],
      [source.values[i]!, cache.values[i]!],
    ] as const) {
      // Rows and heads are the two outer dimensions of both: row-head rh is one run of S·D values.
      for (let rh = 0; rh < rows.count * KV; rh++) {
        const src = (rows.from * KV + rh) * S * D;
        to.set(from.subarray(src, src + S * D), (rows.to * KV + rh) * C * D);
      }
    }
  }
}
