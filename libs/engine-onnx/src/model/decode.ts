/**
 * The decoder's forwards for generation, each the plain layer of decoder.ts with its own way of
 * attending to what came before:
 *
 *   stepForward          one new token per row over a pre-allocated cache (the decode step):
 *                        every shape is known up to B, so reshapes take constant targets (no
 *                        Shape/Slice/Concat kernels at run time) and attention needs no transposes
 *   prefillForward       T new tokens per row after a pre-allocated cache (the prefill), read as it
 *                        is; optionally the last layer on the last column only
 *   growingCacheForward  T new tokens after a past joined by Concat (the exported model.onnx)
 *
 * Each returns the final-normed hidden rows and per layer the keys/values a cache keeps.
 */
import type { QwenConfig } from "@troupe/engine";
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { attention, biasForStackedHeads, cachedAttention, singleTokenAttention } from "./attention.ts";
import {
  attentionInputs,
  type DecoderContext,
  type DecoderInputs,
  decoderLayer,
  embed,
  residualAndMlp,
  windowedLayer,
} from "./decoder.ts";
import { DIM } from "./dims.ts";
import { mlp } from "./mlp.ts";
import { queryWindow } from "./query-window.ts";
import { rmsNorm } from "./rms-norm.ts";
import { applyRopeByMatMul } from "./rope.ts";
import type { LayerWeights, ModelWeights } from "./weights.ts";

/** Per layer keys and values [B, KV, ·, d_head]. */
export type LayerCache = readonly { readonly k: Value; readonly v: Value }[];

export interface DecodeOutputs {
  /** Final-normed hidden rows [N, d]. */
  readonly hidden: Value;
  /** Per layer the keys/values to keep: the new tokens' (pre-allocated caches) or the whole past + new. */
  readonly present: { k: Value; v: Value }[];
}

/**
 * One new token per row over per layer caches [B, KV, C, d_head]; `attnBias` [B, 1, 1, 1, C + 1].
 * Returns hidden rows [B, d] and the token's keys/values [B, KV, 1, d_head].
 */
export function stepForward(
  config: QwenConfig,
  weights: ModelWeights,
  inputs: DecoderInputs,
  cache: LayerCache,
): DecodeOutputs {
  let { x, context: c } = embed(config, weights, inputs);
  // The bias [B, 1, 1, 1, C + 1] as [B, 1, 1, C + 1], once for all layers.
  const bias = op.reshape(inputs.attnBias, x.graph.ints([0, 1, 1, -1]), [DIM.batch, 1, 1, "C+1"]);
  const present: { k: Value; v: Value }[] = [];
  weights.layers.forEach((layer, i) => {
    const step = stepAttention(x, layer, c, cache[i]!, bias);
    present.push(step.present);
    x = mlp(op.add(x, op.linear(step.merged, layer.o.weight, layer.o.bias)), layer, c.eps);
  });
  return { hidden: rmsNorm(x, weights.norm, c.eps), present };
}

/** The step's attention: q [B, 1, H, D], k [B, 1, KV, D] by constant reshapes, RoPE as one MatMul. */
function stepAttention(
  x: Value,
  layer: LayerWeights,
  c: DecoderContext,
  cache: { readonly k: Value; readonly v: Value },
  bias: Value,
) {
  const { H, KV, D } = c.dims;
  const h = rmsNorm(x, layer.inputNorm, c.eps);
  const [q, k, v] = layer.qkv(h);
  const heads = (rows: Value, n: number) =>
    op.reshape(rows, x.graph.ints([-1, 1, n, D]), [DIM.batch, 1, n, D]);
  const norm = (heads: Value, weight: Value | undefined) =>
    weight === undefined ? heads : rmsNorm(heads, weight, c.eps);
  const qHeads = heads(q, H);
  const kHeads = heads(k, KV);
  const qNormed = norm(qHeads, layer.qNorm);
  const kNormed = norm(kHeads, layer.kNorm);
  const qRotated = applyRopeByMatMul(qNormed, c.cos, c.sin, D);
  const kRotated = applyRopeByMatMul(kNormed, c.cos, c.sin, D);
  return singleTokenAttention(op.mul(qRotated, c.scale), kRotated, v, cache, bias, c.dims);
}

/**
 * T new tokens per row after per layer caches [B, KV, C, d_head], read as they are: attention runs
 * over the C cache columns and then the T new ones (`attnBias` [B, 1, 1, T, C + T]), and `present`
 * holds only the new tokens' keys/values [B, KV, T, d_head] (the caller writes them into the
 * cache). No Concat copies the cache. With `lastColumnOnly` the last layer runs on the last column
 * (a query window of 1): the hidden rows are then [B, d], the only ones whose logits are read.
 */
export function prefillForward(
  config: QwenConfig,
  weights: ModelWeights,
  inputs: DecoderInputs,
  cache: LayerCache,
  options: { readonly lastColumnOnly?: boolean } = {},
): DecodeOutputs {
  const lastColumn = options.lastColumnOnly ? inputs.inputIds.graph.ints([1]) : undefined;
  let { x, context: c } = embed(config, weights, inputs);
  const bias = biasForStackedHeads(inputs.attnBias, c.dims.G);
  const last = weights.layers.length - 1;
  const present: { k: Value; v: Value }[] = [];
  weights.layers.forEach((layer, i) => {
    const attend = (q: Value, k: Value, v: Value, b: Value) => cachedAttention(q, k, v, cache[i]!, b);
    const out =
      lastColumn !== undefined && i === last
        ? windowedLayer(x, layer, c, queryWindow(inputs.inputIds, lastColumn), attend)
        : decoderLayer(x, layer, c, bias, attend);
    present.push({ k: out.k, v: out.v });
    x = out.x;
  });
  return { hidden: rmsNorm(x, weights.norm, c.eps), present };
}

/**
 * T new tokens per row after P cached ones, per layer `past` [B, KV, P, d_head] joined to the new
 * keys/values by a Concat (which copies the past every step: generation uses the pre-allocated
 * caches above; this is the self-contained graph exported as model.onnx). `attnBias`
 * [B, 1, 1, T, P + T]; `present` [B, KV, P + T, d_head].
 */
export function growingCacheForward(
  config: QwenConfig,
  weights: ModelWeights,
  inputs: DecoderInputs,
  past: LayerCache,
): DecodeOutputs {
  let { x, context: c } = embed(config, weights, inputs);
  const bias = biasForStackedHeads(inputs.attnBias, c.dims.G);
  const present: { k: Value; v: Value }[] = [];
  weights.layers.forEach((layer, i) => {
    const a = attentionInputs(rmsNorm(x, layer.inputNorm, c.eps), layer, c);
    const k = op.concat([past[i]!.k, a.k], 2);
    const v = op.concat([past[i]!.v, a.v], 2);
    present.push({ k, v });
    x = residualAndMlp(x, attention(a.q, k, v, bias), layer, c);
  });
  return { hidden: rmsNorm(x, weights.norm, c.eps), present };
}
