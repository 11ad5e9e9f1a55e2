/**
 * Rotary position embedding, HF's rotate_half convention (cos/sin tables come from the host,
 * host-inputs.ts):
 *
 *   RoPE(x) = x · cos + rotate_half(x) · sin,   rotate_half(concat(x₁, x₂)) = concat(−x₂, x₁)
 *
 * over the last axis (d_head), with cos/sin [B, T, 1, d_head] broadcast over the heads.
 */
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";

/** rotate_half(x) = concat(−x₂, x₁) over the last axis, x = concat(x₁, x₂). */
function rotateHalf(x: Value, headDim: number): Value {
  const [x1, x2] = op.split(x, [headDim / 2, headDim / 2], -1);
  return op.concat([op.neg(x2!), x1!], -1);
}

/** RoPE: x·cos + rotate_half(x)·sin, cos/sin [B, T, 1, d_head] broadcast over heads. */
export function applyRope(x: Value, cos: Value, sin: Value, headDim: number): Value {
  return op.add(op.mul(x, cos), op.mul(rotateHalf(x, headDim), sin));
}

/**
 * RoPE with rotate_half as one MatMul by a constant signed permutation R [D, D] (x R = concat(−x₂, x₁),
 * exact: each output is ±1 times one input plus zeros) instead of Split + Neg + Concat: one kernel
 * instead of three, which matters in the decode step where every kernel is tiny. No gradient rule
 * is needed there (decode graphs are not differentiated).
 */
export function applyRopeByMatMul(x: Value, cos: Value, sin: Value, headDim: number): Value {
  const half = headDim / 2;
  const R = new Array<number>(headDim * headDim).fill(0);
  for (let j = 0; j < half; j++) {
    R[(j + half) * headDim + j] = -1; // out[j] = −x[j + D/2]
    R[j * headDim + j + half] = 1; // out[j + D/2] = x[j]
  }
  const rotation = x.graph.constant(R, x.dtype, [headDim, headDim]);
  return op.add(op.mul(x, cos), op.mul(op.matmul(x, rotation), sin));
}
