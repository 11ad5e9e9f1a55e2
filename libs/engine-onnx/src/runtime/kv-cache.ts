/**
 * The KV caches of decoding, as the runner keeps them on the host, and the attention bias of a
 * step over a pre-allocated cache:
 *
 *   KvCache        a growing cache: the previous step's `present_*` ORT tensors, fed back as
 *                  `past_*` (the decode graph's Concat copies all of it every step)
 *   FixedKvCache   one pre-allocated [B, KV, capacity, d_head] array per layer and kind, filled
 *                  column by column (batched generation)
 *   RaggedKvCache  the same arrays with one sequence per row, each at its own length (continuous
 *                  batching)
 *
 * Graph-side, the cached decode graph reads the cache as it is and returns only the new tokens'
 * keys/values (model/graphs.ts); the runner writes those into the arrays.
 */
import type { FloatDType } from "../graph/builder.ts";
import { MASKED_BIAS } from "../model/host-inputs.ts";
import type { FloatArray, ort } from "./session.ts";

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
  const out = dtype === "float32" ? new Float32Array(B * time * S) : new Float64Array(B * time * S);
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

/** A pre-allocated KV cache (see `ModelRunner.fixedCache`); `cachedDecodeStep` fills it in place. */
export interface FixedKvCache {
  readonly batch: number;
  /** Columns the arrays hold. */
  readonly capacity: number;
  /** Columns filled so far. */
  length: number;
  /** Per layer [B, KV, capacity, d_head]. */
  readonly keys: readonly FloatArray[];
  readonly values: readonly FloatArray[];
  /** [B, capacity]: 1 where the column holds a real (non-pad) token. */
  readonly valid: Uint8Array;
  /** [B·V] logits of the last step. */
  readonly logits: FloatArray;
}

/**
 * The KV cache of continuous batching: per layer [rows, KV, capacity, d_head], one row per
 * sequence, each filled up to its own `lengths[row]` columns (a row's `valid` flags mark its real
 * tokens, left pads excluded). The scheduler moves rows (a sequence joins, another leaves); the
 * runner only appends one column per row and step (`raggedDecodeStep`).
 */
export interface RaggedKvCache {
  readonly rows: number;
  readonly capacity: number;
  readonly lengths: Int32Array;
  readonly keys: readonly FloatArray[];
  readonly values: readonly FloatArray[];
  /** [rows, capacity]: 1 where the column holds a real token. */
  readonly valid: Uint8Array;
  /** [rows·V] logits of the last step. */
  readonly logits: FloatArray;
}

/**
 * Copies row `from` of a pre-allocated cache (fixed or ragged: rows are the outermost dimension
 * of its keys, values and valid flags) over row `to`.
 */
export function copyCacheRow(
  cache: Pick<FixedKvCache, "keys" | "values" | "valid" | "capacity">,
  from: number,
  to: number,
): void {
  const C = cache.capacity;
  const rowValues = (cache.keys[0]!.length * C) / cache.valid.length;
  for (const arrays of [cache.keys, cache.values])
    for (const a of arrays) a.copyWithin(to * rowValues, from * rowValues, (from + 1) * rowValues);
  cache.valid.copyWithin(to * C, from * C, (from + 1) * C);
}

/**
 * Copies `count` rows of keys and values whose rows hold `columns` columns (per layer
 * [rows, KV, columns, d_head]: what `ModelRunner.prefill` returns, or a smaller cache) into columns
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

/** A growing KV cache of `decodeStep`: the ORT tensors of the previous step's `present_*` outputs. */
export interface KvCache {
  /** Cached columns P. */
  readonly length: number;
  readonly keys: readonly ort.Tensor[];
  readonly values: readonly ort.Tensor[];
}
