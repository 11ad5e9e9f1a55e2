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

/**
 * cos/sin tables [B, T, 1, D] of HF's default RoPE: inv_freq_j = θ^(−2j/D) for j < D/2,
 * angle = position · inv_freq, duplicated over both halves (the rotate_half layout).
 */
export function ropeTables(
  positions: Int32Array,
  headDim: number,
  theta: number,
  dtype: FloatDType,
): { cos: Float32Array | Float64Array; sin: Float32Array | Float64Array } {
  const half = headDim / 2;
  const n = positions.length;
  const cos = dtype === "float32" ? new Float32Array(n * headDim) : new Float64Array(n * headDim);
  const sin = dtype === "float32" ? new Float32Array(n * headDim) : new Float64Array(n * headDim);
  const invFreq = Array.from({ length: half }, (_, j) => 1 / theta ** ((2 * j) / headDim));
  for (let i = 0; i < n; i++) {
    const pos = positions[i]!;
    for (let j = 0; j < half; j++) {
      const angle = pos * invFreq[j]!;
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[i * headDim + j] = c;
      cos[i * headDim + half + j] = c;
      sin[i * headDim + j] = s;
      sin[i * headDim + half + j] = s;
    }
  }
  return { cos, sin };
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
  const out =
    dtype === "float32" ? new Float32Array(batch * time * total) : new Float64Array(batch * time * total);
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
