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
import { mlp, swiGlu } from "./mlp.ts";
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
 *
 * In float32 each residual Add and the RMSNorm after it are one SkipSimplifiedLayerNormalization
 * (ORT's com.microsoft kernel: the sum and its norm in one pass; ORT does not fuse them itself
 * here): 4 kernels fewer per layer than the plain spelling, which float64 graphs keep (the fused
 * kernels' float64 variants are not what the references are checked against).
 */
export function stepForward(
  config: QwenConfig,
  weights: ModelWeights,
  inputs: DecoderInputs,
  cache: LayerCache,
): DecodeOutputs {
  const { x: embedded, context: c } = embed(config, weights, inputs);
  // The bias [B, 1, 1, 1, C + 1] as [B, 1, 1, C + 1], once for all layers.
  const bias = op.reshape(inputs.attnBias, embedded.graph.ints([0, 1, 1, -1]), [DIM.batch, 1, 1, "C+1"]);
  const rope = stepRope(c);
  const present: { k: Value; v: Value }[] = [];
  if (embedded.dtype !== "float32") {
    let x = embedded;
    weights.layers.forEach((layer, i) => {
      const step = stepAttention(rmsNorm(x, layer.inputNorm, c.eps), layer, c, rope, cache[i]!, bias);
      present.push(step.present);
      x = mlp(op.add(x, op.linear(step.merged, layer.o.weight, layer.o.bias)), layer, c.eps);
    });
    return { hidden: rmsNorm(x, weights.norm, c.eps), present };
  }
  let x = embedded;
  let h = simplifiedNorm(x, weights.layers[0]!.inputNorm, c.eps);
  weights.layers.forEach((layer, i) => {
    const step = stepAttention(h, layer, c, rope, cache[i]!, bias);
    present.push(step.present);
    const attended = op.linear(step.merged, layer.o.weight, layer.o.bias);
    const post = skipNorm(attended, x, layer.postNorm, c.eps); // x + attended, normed
    const [gate, up] = layer.gateUp(post.normed);
    const mlpOut = op.linear(swiGlu(gate, up), layer.down);
    const next = skipNorm(mlpOut, post.sum, weights.layers[i + 1]?.inputNorm ?? weights.norm, c.eps);
    x = next.sum;
    h = next.normed;
  });
  return { hidden: h, present };
}

/** RMSNorm over the last axis as ORT's SimplifiedLayerNormalization kernel (float32 graphs). */
function simplifiedNorm(x: Value, weight: Value, eps: number): Value {
  return x.graph.untaped(
    () =>
      x.graph.op("SimplifiedLayerNormalization", [x, weight], [{ dtype: x.dtype, shape: x.shape }], {
        axis: -1,
        epsilon: { float: eps },
        stash_type: 1,
      })[0]!,
  );
}

/** sum = skip + input and RMSNorm(sum) in one com.microsoft SkipSimplifiedLayerNormalization kernel. */
function skipNorm(input: Value, skip: Value, weight: Value, eps: number): { normed: Value; sum: Value } {
  const graph = input.graph;
  return graph.untaped(() => {
    const out = { dtype: input.dtype, shape: input.shape };
    const stat = { dtype: input.dtype, shape: [], omitted: true };
    const [normed, , , sum] = graph.op(
      "SkipSimplifiedLayerNormalization",
      [input, skip, weight],
      [out, stat, stat, out],
      { epsilon: { float: eps } },
      undefined,
      "com.microsoft",
    );
    return { normed: normed!, sum: sum! };
  });
}

/**
 * The step's RoPE tables: for keys cos/sin [B, 1, 1, D] as given; for queries scaled by 1/√d_head
 * once here instead of a Mul per layer when that scale is a power of two (d_head = 16, 64, 256):
 * then RoPE(q)·s = q·(cos·s) + rotate_half(q)·(sin·s) exactly (scaling by 2^k rounds nothing).
 */
function stepRope(c: DecoderContext): { cos: Value; sin: Value; qCos: Value; qSin: Value; qScaled: boolean } {
  const scale = 1 / Math.sqrt(c.dims.D);
  if (!Number.isInteger(Math.log2(scale)))
    return { cos: c.cos, sin: c.sin, qCos: c.cos, qSin: c.sin, qScaled: false };
  return {
    cos: c.cos,
    sin: c.sin,
    qCos: op.mul(c.cos, c.scale),
    qSin: op.mul(c.sin, c.scale),
    qScaled: true,
  };
}

/**
 * The step's attention from the normed rows h [B, d]: q reshaped straight to [B, KV, G, D] (head
 * h = kv·G + g) and k, v to [B, KV, 1, D], qwen3's head norms, RoPE with rotate_half as one MatMul,
 * then `singleTokenAttention` over the cache.
 */
function stepAttention(
  h: Value,
  layer: LayerWeights,
  c: DecoderContext,
  rope: ReturnType<typeof stepRope>,
  cache: { readonly k: Value; readonly v: Value },
  bias: Value,
) {
  const { KV, G, D } = c.dims;
  const [q, k, v] = layer.qkv(h);
  const heads = (rows: Value, n: number, m: number) =>
    op.reshape(rows, h.graph.ints([-1, n, m, D]), [DIM.batch, n, m, D]);
  const norm = (x: Value, weight: Value | undefined) =>
    weight === undefined ? x : rmsNorm(x, weight, c.eps);
  const qRotated = applyRopeByMatMul(norm(heads(q, KV, G), layer.qNorm), rope.qCos, rope.qSin, D);
  const kRotated = applyRopeByMatMul(norm(heads(k, KV, 1), layer.kNorm), rope.cos, rope.sin, D);
  const qScaled = rope.qScaled ? qRotated : op.mul(qRotated, c.scale);
  return singleTokenAttention(qScaled, kRotated, heads(v, KV, 1), cache, bias, c.dims);
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
