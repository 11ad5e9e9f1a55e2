/**
 * The host's weights, and how a run feeds them: each graph weight input becomes an ORT tensor
 * that wraps the host array (no copy: an in-place optimizer update is seen by the next run).
 */
import type { FloatDType } from "../graph/builder.ts";
import { fusedData, type GraphWeightSpec } from "../model/fused-weights.ts";
import { type FloatArray, type ort, tensor } from "./session.ts";

export interface HostTensor {
  readonly shape: readonly number[];
  readonly data: FloatArray;
}

export type HostWeights = ReadonlyMap<string, HostTensor>;

/**
 * A graph's weight inputs (`specs`) as ORT tensors over the host arrays: no copy for plain tensors
 * and for packed fused groups (`packWeights`); unpacked groups are concatenated into a fresh array.
 * Throws naming the first weight missing or not of `dtype`.
 */
export function weightFeeds(
  weights: HostWeights,
  specs: readonly GraphWeightSpec[],
  dtype: FloatDType,
  label: string,
): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (const [name, t] of weights) {
    if (t.data instanceof Float32Array !== (dtype === "float32")) {
      throw new Error(`${label}: weight ${name} is not ${dtype}`);
    }
  }
  for (const spec of specs) {
    const t = weights.get(spec.name);
    if (spec.group !== undefined)
      feeds[spec.name] = tensor(dtype, fusedData(spec.group, weights), spec.shape);
    else if (t === undefined) throw new Error(`${label}: missing weight ${spec.name}`);
    else feeds[spec.name] = tensor(dtype, t.data, t.shape);
  }
  return feeds;
}
