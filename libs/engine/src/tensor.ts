/**
 * The one tensor type of the runtime-agnostic code: a shape and row-major float32 data. Weights,
 * gradients and optimizer moments are all `Map<name, Tensor>` in HF naming.
 */
export interface Tensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/** Named tensors in HF naming (`model.layers.0.mlp.up_proj.weight` → tensor). Insertion order is kept. */
export type Weights = Map<string, Tensor>;

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function shapeText(shape: readonly number[]): string {
  return `[${shape.join(",")}]`;
}

/** A deep copy (new data buffers). */
export function cloneWeights(weights: Weights): Weights {
  const out: Weights = new Map();
  for (const [name, t] of weights) out.set(name, { shape: [...t.shape], data: t.data.slice() });
  return out;
}
