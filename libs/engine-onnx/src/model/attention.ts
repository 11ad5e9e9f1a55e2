/**
 * Causal self-attention with grouped query heads (GQA: G = H / KV query heads share a KV head),
 * q already scaled by 1/√d_head:
 *
 *   a = softmax(q kᵀ + bias) v,   bias 0 where a query may see a key, −1e9 otherwise (host-inputs.ts)
 *
 * GQA needs no repeat of k/v: the G query heads of a KV head are stacked as rows of one matrix,
 * q [B, KV, G·T, D] against k, v [B, KV, S, D] (head h = kv·G + g, as HF's repeat_kv), so q kᵀ and
 * p v are plain batched products over B·KV, and the gradient needs no ReduceSum over G.
 *
 * Three ways to attend, one per kind of graph:
 *   attention             keys and values given whole (scoring, training, the exported decode graph)
 *   cachedAttention       a pre-allocated cache, then the T new keys (the cached prefill)
 *   singleTokenAttention  one new token per row over the cache, with static shapes (the decode step)
 */
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { DIM, shapeVector } from "./dims.ts";

export interface HeadDims {
  /** Query heads, KV heads, queries per KV head, head size. */
  readonly H: number;
  readonly KV: number;
  readonly G: number;
  readonly D: number;
}

/**
 * q [B, T, H, D] (scaled) → [B, H, T, D] → [B, KV, G·T, D]: the G query heads of a KV head stacked
 * as rows. `time` names q's time axis (T, or the window's W).
 */
export function stackQueryHeads(q: Value, dims: HeadDims, time: string): Value {
  const { KV, G, D } = dims;
  return op.reshape(op.transpose(q, [0, 2, 1, 3]), q.graph.ints([0, KV, -1, D]), [
    DIM.batch,
    KV,
    `${G}*${time}`,
    D,
  ]);
}

/** The attention output [B, KV, G·T, D] back to rows [N, H·D] (heads side by side, as o_proj reads them). */
export function mergeHeads(context: Value, dims: HeadDims, time: string): Value {
  const { H, D } = dims;
  const graph = context.graph;
  return op.reshape(
    op.transpose(op.reshape(context, graph.ints([0, H, -1, D]), [DIM.batch, H, time, D]), [0, 2, 1, 3]),
    graph.ints([-1, H * D]),
    [DIM.rows, H * D],
  );
}

/** Attention bias [B, 1, 1, T, S] → [B, 1, G·T, S] (copied G times), matching q's stacked heads. */
export function biasForStackedHeads(bias: Value, G: number): Value {
  const graph = bias.graph;
  return graph.untaped(() => {
    const [B, , , T, S] = bias.shape;
    const repeated = op.expand(bias, graph.ints([1, 1, G, 1, 1]), [B!, 1, G, T!, S!]);
    return op.reshape(repeated, shapeVector(graph, [[bias, 0], 1, -1, [bias, 4]]), [B!, 1, `${G}*${T}`, S!]);
  });
}

/** softmax(q kᵀ + bias) v with q [B, KV, G·T, D] (already scaled), k, v [B, KV, S, D] → [B, KV, G·T, D]. */
export function attention(q: Value, k: Value, v: Value, bias: Value): Value {
  const scores = op.add(op.matmul(q, op.transpose(k, [0, 1, 3, 2])), bias); // [B, KV, G·T, S]
  return op.matmul(op.softmax(scores, -1), v);
}

/**
 * Attention over a pre-allocated cache [B, KV, C, D] followed by the T new keys/values, without
 * joining them: the scores of both blocks are concatenated (a [B, KV, G·T, C + T] tensor, small
 * next to the cache), one softmax normalises over both, and the probabilities are split again to
 * weight each block's values. Prefill of the cached decode (no gradient rules needed).
 */
export function cachedAttention(
  q: Value,
  k: Value,
  v: Value,
  cache: { readonly k: Value; readonly v: Value },
  bias: Value,
): Value {
  const graph = q.graph;
  return graph.untaped(() => {
    const kT = (x: Value) => op.transpose(x, [0, 1, 3, 2]);
    const scores = op.add(op.concat([op.matmul(q, kT(cache.k)), op.matmul(q, kT(k))], -1), bias);
    const probs = op.softmax(scores, -1); // [B, KV, G·T, C + T]
    // Split at run time: C and T are dynamic, so the split sizes come from the shapes.
    const sizes = op.concat(
      [op.slice(op.shapeOf(cache.k), 0, 2, 3, [1]), op.slice(op.shapeOf(k), 0, 2, 3, [1])],
      0,
    );
    const [B, KV, GT] = q.shape;
    const [fromCache, fromNew] = graph.op(
      "Split",
      [probs, sizes],
      [
        { dtype: probs.dtype, shape: [B!, KV!, GT!, cache.k.shape[2]!] },
        { dtype: probs.dtype, shape: [B!, KV!, GT!, k.shape[2]!] },
      ],
      { axis: 3 },
    );
    return op.add(op.matmul(fromCache!, cache.v), op.matmul(fromNew!, v));
  });
}

/**
 * Attention of one new token per row over a pre-allocated cache [B, KV, C, d_head]. With T = 1 the
 * heads need no transposes: q (scaled) is [B, KV, G, D] (head h = kv·G + g) and the new k, v are
 * [B, KV, 1, D], all by reshapes alone (the caller's). Scores of the cache columns and of the token
 * itself are concatenated, normalised by one softmax with the bias [B, 1, 1, C + 1], and split
 * again by static slices (the last column is the token's own).
 * Returns the merged heads [B, H·D] and the token's key/value [B, KV, 1, D] for the cache.
 */
export function singleTokenAttention(
  q4: Value,
  k4: Value,
  v4: Value,
  cache: { readonly k: Value; readonly v: Value },
  bias: Value,
  dims: HeadDims,
): { merged: Value; present: { k: Value; v: Value } } {
  const graph = q4.graph;
  const { KV, G, D } = dims;
  return graph.untaped(() => {
    const B = DIM.batch;
    const C = cache.k.shape[2]!;
    const scores = op.add(
      op.concat(
        [op.matmul(q4, op.transpose(cache.k, [0, 1, 3, 2])), op.matmul(q4, op.transpose(k4, [0, 1, 3, 2]))],
        -1,
      ), // [B, KV, G, C + 1]
      bias,
    );
    const probs = op.softmax(scores, -1);
    const fromCache = op.slice(probs, 3, 0, -1, [B, KV, G, C]);
    const fromSelf = op.slice(probs, 3, -1, Number.MAX_SAFE_INTEGER, [B, KV, G, 1]);
    const context = op.add(op.matmul(fromCache, cache.v), op.mul(fromSelf, v4)); // [B, KV, G, D]
    return {
      merged: op.reshape(context, graph.ints([-1, KV * G * D]), [B, KV * G * D]),
      present: { k: k4, v: v4 },
    };
  });
}
