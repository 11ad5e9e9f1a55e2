/**
 * The inputs of the model graphs that the host computes: RoPE tables and attention biases. They
 * are cheap in TypeScript (O(B·T·d_head) and O(B·T·S)) and keep the graphs free of position
 * bookkeeping, so one graph serves right padding (scoring, training), left padding (generation)
 * and KV-cache decoding. Padding sequences into a batch (`padBatch`) is the runtime's
 * (runtime/padding.ts); the bias of a pre-allocated cache is runtime/kv-cache.ts's.
 */
import type { FloatDType } from "../graph/builder.ts";

/** Additive bias of a masked attention entry: large and finite, so a fully masked row stays finite. */
export const MASKED_BIAS = -1e9;

/** A zeroed float array of `n` elements in the graphs' dtype. */
export function floatArray(dtype: FloatDType, n: number): Float32Array | Float64Array {
  return dtype === "float32" ? new Float32Array(n) : new Float64Array(n);
}

/**
 * cos/sin tables [B, T, 1, D] of HF's default RoPE: inv_freq_j = θ^(−2j/D) for j < D/2,
 * angle = position · inv_freq, duplicated over both halves (the rotate_half layout).
 *
 * Each position's row is computed once per (D, θ, dtype) and copied from then on: a decode step
 * asks for the same few positions again and again, and their cos/sin were 2.6% of a serving
 * process's JavaScript thread. The rows are the same numbers either way (the same operations,
 * computed once).
 */
export function ropeTables(
  positions: Int32Array,
  headDim: number,
  theta: number,
  dtype: FloatDType,
): { cos: Float32Array | Float64Array; sin: Float32Array | Float64Array } {
  const n = positions.length;
  const cos = floatArray(dtype, n * headDim);
  const sin = floatArray(dtype, n * headDim);
  let maxPosition = 0;
  for (let i = 0; i < n; i++) maxPosition = Math.max(maxPosition, positions[i]!);
  const rows = ropeRows(headDim, theta, dtype, maxPosition);
  for (let i = 0; i < n; i++) {
    const pos = positions[i]!;
    if (pos < 0) throw new Error(`ropeTables: position ${pos} at index ${i} is negative`);
    cos.set(rows.cos.subarray(pos * headDim, (pos + 1) * headDim), i * headDim);
    sin.set(rows.sin.subarray(pos * headDim, (pos + 1) * headDim), i * headDim);
  }
  return { cos, sin };
}

interface RopeRows {
  cos: Float32Array | Float64Array;
  sin: Float32Array | Float64Array;
  /** Positions 0 … rows − 1 are filled. */
  rows: number;
}
const ropeRowTables = new Map<string, RopeRows>();

/** The cos/sin rows of positions 0 … at least `maxPosition` for (D, θ, dtype), grown by doubling. */
function ropeRows(headDim: number, theta: number, dtype: FloatDType, maxPosition: number): RopeRows {
  const key = `${headDim}/${theta}/${dtype}`;
  let table = ropeRowTables.get(key);
  if (table !== undefined && maxPosition < table.rows) return table;
  const rows = Math.max(64, 2 ** Math.ceil(Math.log2(maxPosition + 1)));
  const cos = floatArray(dtype, rows * headDim);
  const sin = floatArray(dtype, rows * headDim);
  const from = table?.rows ?? 0;
  if (table !== undefined) {
    cos.set(table.cos);
    sin.set(table.sin);
  }
  const half = headDim / 2;
  const invFreq = Array.from({ length: half }, (_, j) => 1 / theta ** ((2 * j) / headDim));
  for (let pos = from; pos < rows; pos++) {
    for (let j = 0; j < half; j++) {
      const angle = pos * invFreq[j]!;
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[pos * headDim + j] = c;
      cos[pos * headDim + half + j] = c;
      sin[pos * headDim + j] = s;
      sin[pos * headDim + half + j] = s;
    }
  }
  table = { cos, sin, rows };
  ropeRowTables.set(key, table);
  return table;
}

/**
 * Attention bias [B, 1, 1, T, S] for T new query columns after P cached ones (S = P + T): query
 * column P + t sees key column s iff s ≤ P + t (causal) and key s is a real token.
 * `keyValid` is [B, S].
 */
export function attentionBias(
  keyValid: Uint8Array,
  batch: number,
  past: number,
  time: number,
  dtype: FloatDType,
): Float32Array | Float64Array {
  const total = past + time;
  if (keyValid.length !== batch * total)
    throw new Error(`attentionBias: keyValid has ${keyValid.length} entries`);
  const out = floatArray(dtype, batch * time * total);
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < time; t++) {
      const row = (b * time + t) * total;
      for (let s = 0; s < total; s++) {
        out[row + s] = s <= past + t && keyValid[b * total + s] === 1 ? 0 : MASKED_BIAS;
      }
    }
  }
  return out;
}
