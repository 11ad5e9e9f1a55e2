/**
 * The Qwen2 / Qwen3 decoder as graph-building functions (HF `modeling_qwen2/3.py`, same math):
 *
 *   x = embed[ids]
 *   per layer:  h = RMSNorm(x)
 *               q, k, v = h W_qᵀ (+b), h W_kᵀ (+b), h W_vᵀ (+b)        split into heads
 *               qwen3: q, k = RMSNorm_head(q), RMSNorm_head(k)           (over head_dim)
 *               q, k = RoPE(q), RoPE(k)                                   (rotate_half convention)
 *               a = softmax(q kᵀ / √d_head + bias) v                       (GQA: G = H / KV query heads per KV head)
 *               x = x + a W_oᵀ (+b)
 *               x = x + W_down (SiLU(W_gate h') ⊙ W_up h'),  h' = RMSNorm(x)
 *   logits = RMSNorm(x) W_lmᵀ  (W_lm = embed when tied)
 *
 * Token-wise parts work on rows x [N = B·T, d] so every projection is one Gemm with the weight in
 * its HF [out, in] layout (transB = 1: no transposed copy). Masks, RoPE cos/sin and positions come
 * in as inputs computed on the host (cheap, and exact for any padding).
 *
 * src/model/ is the model and nothing else, written in the graph toolkit of src/graph/ (builder, ops
 * with their gradient rules, autodiff); running it (ORT sessions, feeds, KV caches, generation,
 * memory plans) is src/runtime/'s. Read in this order:
 *
 *   decoder.ts        this file: a layer, the forward of scoring and training, the lm head
 *   rms-norm.ts       RMSNorm with its closed-form gradient
 *   rope.ts           rotary position embedding
 *   attention.ts      GQA attention: over whole keys, over a pre-allocated cache, one token a row
 *   mlp.ts            SwiGLU
 *   weights.ts        the weights resolved per layer (fused or separate projections)
 *   query-window.ts   the last layer on the trailing columns only
 *   decode.ts         the decode forwards: the single-token step, the cached prefill, the growing cache
 *   dims.ts           the symbolic dims and run-time shape vectors
 *   host-inputs.ts    what the host feeds the decoder: RoPE cos/sin tables, the causal + padding bias
 *   fused-weights.ts  the fused [W_q; W_k; W_v] and [W_gate; W_up] inputs of the decode graphs
 *   ppo-loss.ts       the PPO-clip loss as graph nodes
 *   graphs.ts         the whole graphs: scoring, decode, cached decode, train (loss + ∂loss/∂w)
 *
 * The same model, twice more: the float64 reference the tests compare against
 * (libs/engine/src/qwen-reference.ts, `@troupe/engine/reference`), and the GPU worker's PyTorch
 * decoder (apps/engine-torch/troupe_worker/qwen.py).
 */
import type { QwenConfig } from "@troupe/engine";
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { attention, biasForStackedHeads, type HeadDims, mergeHeads, stackQueryHeads } from "./attention.ts";
import { DIM, shapeVector } from "./dims.ts";
import { mlp } from "./mlp.ts";
import { type QueryWindow, queryWindow } from "./query-window.ts";
import { rmsNorm } from "./rms-norm.ts";
import { applyRope } from "./rope.ts";
import type { LayerWeights, ModelWeights } from "./weights.ts";

export { DIM } from "./dims.ts";

export interface DecoderInputs {
  /** [B, T] int64. */
  readonly inputIds: Value;
  /** RoPE tables at each token's position, [B, T, 1, d_head]. */
  readonly cos: Value;
  readonly sin: Value;
  /** Additive attention bias [B, 1, 1, T, S]: 0 where query t may see key s, a large negative otherwise. */
  readonly attnBias: Value;
}

/** What every layer of one forward reads besides its weights. */
export interface DecoderContext extends DecoderInputs {
  readonly dims: HeadDims;
  /** Model width d and RMSNorm's ε. */
  readonly d: number;
  readonly eps: number;
  /** 1/√d_head: q is scaled once instead of the scores, (q/√D) kᵀ. */
  readonly scale: Value;
}

/** Attends stacked queries [B, KV, G·T, D] over keys and values [B, KV, S, D] with a stacked bias. */
export type Attend = (q: Value, k: Value, v: Value, bias: Value) => Value;

/** A layer's output rows and its own keys and values [B, KV, T, D] (what a cache keeps). */
export interface LayerOutputs {
  readonly x: Value;
  readonly k: Value;
  readonly v: Value;
}

/** The embedded ids as rows [N, d], and the context of the layers that follow. */
export function embed(
  config: QwenConfig,
  weights: ModelWeights,
  inputs: DecoderInputs,
): { x: Value; context: DecoderContext } {
  const graph = inputs.inputIds.graph;
  const d = config.hidden_size;
  const D = config.head_dim;
  const H = config.num_attention_heads;
  const KV = config.num_key_value_heads;
  const rowsShape = graph.ints([-1, d]);
  const embedded = op.embedding(weights.embed, inputs.inputIds); // [B, T, d]
  const x = op.reshape(embedded, rowsShape, [DIM.rows, d]);
  const dims = { H, KV, G: H / KV, D };
  const scale = op.scalarLike(x, 1 / Math.sqrt(D));
  return { x, context: { ...inputs, dims, d, eps: config.rms_norm_eps, scale } };
}

/** qwen3's RMSNorm of each head over D (qwen2 has none). */
function headNorm(heads: Value, norm: Value | undefined, c: DecoderContext): Value {
  return norm === undefined ? heads : rmsNorm(heads, norm, c.eps);
}

/**
 * The first half of a layer up to attention, from the normed rows h = RMSNorm(x): the scaled
 * queries stacked by KV head [B, KV, G·T, D] and the keys and values [B, KV, T, D]. With a
 * `window` the queries are those of the window's columns only ([B, KV, G·W, D]).
 */
export function attentionInputs(
  h: Value,
  layer: LayerWeights,
  c: DecoderContext,
  window?: QueryWindow,
): { q: Value; k: Value; v: Value } {
  const { H, KV, D } = c.dims;
  const { batch: B, time: T } = DIM;
  const headsShape = (n: number) => shapeVector(h.graph, [[c.inputIds, 0], [c.inputIds, 1], n, D]);
  const Tq = window === undefined ? T : "W";
  const [q, k, v] = layer.qkv(h, window?.rows);
  const qHeads = op.reshape(q, window?.heads(H, D) ?? headsShape(H), [B, Tq, H, D]);
  const kHeads = op.reshape(k, headsShape(KV), [B, T, KV, D]);
  const qNormed = headNorm(qHeads, layer.qNorm, c);
  const kNormed = headNorm(kHeads, layer.kNorm, c);
  const qRotated =
    window === undefined
      ? applyRope(qNormed, c.cos, c.sin, D)
      : applyRope(qNormed, window.columns(c.cos), window.columns(c.sin), D);
  const kRotated = applyRope(kNormed, c.cos, c.sin, D);
  return {
    q: stackQueryHeads(op.mul(qRotated, c.scale), c.dims, Tq),
    k: op.transpose(kRotated, [0, 2, 1, 3]),
    v: op.transpose(op.reshape(v, headsShape(KV), [B, T, KV, D]), [0, 2, 1, 3]),
  };
}

/**
 * The second half of a layer: x + context W_oᵀ (+b), then x + MLP(RMSNorm(x)). With a `window`
 * the residual is the window's rows of x.
 */
export function residualAndMlp(
  x: Value,
  context: Value,
  layer: LayerWeights,
  c: DecoderContext,
  window?: QueryWindow,
): Value {
  const merged = mergeHeads(context, c.dims, window === undefined ? DIM.time : "W");
  const attended = op.linear(merged, layer.o.weight, layer.o.bias);
  return mlp(op.add(window?.rows(x, c.d) ?? x, attended), layer, c.eps);
}

/** One decoder layer over rows x [N, d]; `bias` is the attention bias stacked for G heads. */
export function decoderLayer(
  x: Value,
  layer: LayerWeights,
  c: DecoderContext,
  bias: Value,
  attend: Attend,
): LayerOutputs {
  const a = attentionInputs(rmsNorm(x, layer.inputNorm, c.eps), layer, c);
  return { x: residualAndMlp(x, attend(a.q, a.k, a.v, bias), layer, c), k: a.k, v: a.v };
}

/**
 * The last layer on the window's columns only: its queries, attention output, MLP (and the final
 * norm after it) on the W trailing columns, its keys and values on every column. Outputs rows
 * [B·W, d].
 */
export function windowedLayer(
  x: Value,
  layer: LayerWeights,
  c: DecoderContext,
  window: QueryWindow,
  attend: Attend,
): LayerOutputs {
  const h = rmsNorm(x, layer.inputNorm, c.eps);
  const bias = window.bias(c.attnBias, c.dims.G);
  const a = attentionInputs(h, layer, c, window);
  return { x: residualAndMlp(x, attend(a.q, a.k, a.v, bias), layer, c, window), k: a.k, v: a.v };
}

/**
 * The forward of scoring and training: every column attends to the columns before it (and to
 * itself) as `attnBias` allows. Returns the final-normed hidden rows [N, d]; with a query window W
 * (int64 [1], query-window.ts) the last layer runs on the W trailing columns and the rows are
 * [B·W, d].
 */
export function decoderForward(
  config: QwenConfig,
  weights: ModelWeights,
  inputs: DecoderInputs,
  window?: Value,
): Value {
  let { x, context: c } = embed(config, weights, inputs);
  const bias = biasForStackedHeads(inputs.attnBias, c.dims.G);
  const full = window === undefined ? weights.layers : weights.layers.slice(0, -1);
  for (const layer of full) x = decoderLayer(x, layer, c, bias, attention).x;
  if (window !== undefined)
    x = windowedLayer(x, weights.layers.at(-1)!, c, queryWindow(inputs.inputIds, window), attention).x;
  return rmsNorm(x, weights.norm, c.eps);
}

/**
 * logits = hidden W_lmᵀ, [N, V]; with `vocab` < V only the first `vocab` rows of the head are used
 * ([N, vocab]): ids a tokenizer cannot produce (a vocabulary padded past the tokenizer's) are left
 * out of the softmax, so scoring and sampling use the same distribution.
 */
export function lmHead(
  config: QwenConfig,
  weights: ModelWeights,
  hidden: Value,
  vocab = config.vocab_size,
): Value {
  const w = weights.head;
  return op.linear(hidden, vocab === config.vocab_size ? w : op.leadingRows(w, vocab));
}
