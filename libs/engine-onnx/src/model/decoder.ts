/**
 * The Qwen2 / Qwen3 decoder as graph-building functions (HF `modeling_qwen2/3.py`, same math):
 *
 *   x = embed[ids]
 *   per layer:  h = RMSNorm(x)
 *               q, k, v = h W_qᵀ (+b), h W_kᵀ (+b), h W_vᵀ (+b)        one fused Gemm, split into heads
 *               qwen3: q, k = RMSNorm_head(q), RMSNorm_head(k)           (over head_dim)
 *               q, k = RoPE(q), RoPE(k)                                   (rotate_half convention)
 *               k, v = concat(past, new)                                   (KV cache, decode only;
 *                                                                         or attention over a pre-allocated cache)
 *               a = softmax(q kᵀ / √d_head + bias) v                       (GQA: G = H / KV query heads per KV head)
 *               x = x + a W_oᵀ (+b)
 *               x = x + W_down (SiLU(W_gate h') ⊙ W_up h'),  h' = RMSNorm(x)
 *   logits = RMSNorm(x) W_lmᵀ  (W_lm = embed when tied)
 *
 * Token-wise parts work on rows x [N = B·T, d] so every projection is one Gemm with the weight in
 * its HF [out, in] layout (transB = 1: no transposed copy). GQA needs no repeat of k/v: q is viewed
 * as [B, KV, G, T, d_head] and k, v as [B, KV, 1, S, d_head]; MatMul broadcasts over G (and the
 * gradient sums over it). Masks, RoPE cos/sin and positions come in as inputs computed on the host
 * (cheap, and exact for any padding).
 *
 * src/model/ is the model and nothing else, written in the graph toolkit of src/graph/ (builder, ops
 * with their gradient rules, autodiff); running it (ORT sessions, feeds, KV caches, generation,
 * memory plans) is src/runtime/'s. Read in this order:
 *
 *   decoder.ts        this file: the decoder layers, SwiGLU, the lm head
 *   rms-norm.ts       RMSNorm with its closed-form gradient
 *   host-inputs.ts    what the host feeds the decoder: RoPE cos/sin tables, the causal + padding bias
 *   fused-weights.ts  the fused [W_q; W_k; W_v] and [W_gate; W_up] inputs of the decode graphs
 *   ppo-loss.ts       the PPO-clip loss as graph nodes
 *   graphs.ts         the whole graphs: scoring, decode, cached decode, train (loss + ∂loss/∂w)
 *
 * The same model, twice more: the float64 reference the tests compare against
 * (libs/engine/src/qwen-reference.ts, `@troupe/engine/reference`), and the GPU worker's PyTorch
 * decoder (apps/engine-torch/troupe_worker/qwen.py).
 */
import { hasQkNorm, type QwenConfig, qwenBiases } from "@troupe/engine";
import type { FloatDType, Graph, Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { rmsNorm } from "./rms-norm.ts";

/** Symbolic dimension names of the model graphs. */
export const DIM = { batch: "B", time: "T", past: "P", total: "S", rows: "N" } as const;

export type WeightValues = ReadonlyMap<string, Value>;

export interface DecoderInputs {
  /** [B, T] int64. */
  readonly inputIds: Value;
  /** RoPE tables at each token's position, [B, T, 1, d_head]. */
  readonly cos: Value;
  readonly sin: Value;
  /** Additive attention bias [B, 1, 1, T, S]: 0 where query t may see key s, a large negative otherwise. */
  readonly attnBias: Value;
  /** Per layer cached keys/values [B, KV, P, d_head] (decode graphs only), extended by Concat. */
  readonly past?: readonly { readonly k: Value; readonly v: Value }[];
  /**
   * Per layer pre-allocated cache [B, KV, C, d_head] (cached decode graphs only), read as it is:
   * attention runs over the C cache columns and then the T new ones, `attnBias` is then
   * [B, 1, 1, T, C + T], and `present` holds only the new tokens' keys/values [B, KV, T, d_head]
   * (the caller writes them into the cache). No Concat copies the cache.
   */
  readonly cache?: readonly { readonly k: Value; readonly v: Value }[];
  /**
   * The number W (int64 [1]) of trailing columns whose outputs are wanted (scoring and training of
   * left-padded sequences: the columns that predict completion tokens). The last layer then runs
   * its queries, attention output, MLP and the final norm on those columns only; its keys and
   * values still cover every column. `hidden` is then [B·W, d]. The same math for the columns
   * kept: no other column's output feeds them in the last layer.
   */
  readonly queryWindow?: Value;
}

export interface DecoderOutputs {
  /** Final-normed hidden states, rows [N, d]. */
  readonly hidden: Value;
  /** Per layer keys/values including the new tokens, [B, KV, S, d_head] (only the new ones with `cache`). */
  readonly present: { readonly k: Value; readonly v: Value }[];
}

/** Declares the weights as graph inputs (HF names and shapes, fused groups as one input each). */
export function weightInputs(
  graph: Graph,
  specs: readonly { name: string; shape: readonly number[] }[],
  dtype: FloatDType,
): Map<string, Value> {
  const weights = new Map<string, Value>();
  for (const spec of specs) weights.set(spec.name, graph.input(spec.name, dtype, spec.shape));
  return weights;
}

function weight(weights: WeightValues, name: string): Value {
  const w = weights.get(name);
  if (w === undefined) throw new Error(`decoder: missing weight ${name}`);
  return w;
}

/** Runtime int64 shape vector from pieces: numbers, or [value, axis] = that value's dim. */
function shapeVector(graph: Graph, parts: readonly (number | readonly [Value, number])[]): Value {
  return graph.untaped(() => {
    const pieces = parts.map((p) => {
      if (typeof p === "number") return graph.ints([p]);
      const [v, axis] = p;
      return op.slice(op.shapeOf(v), 0, axis, axis + 1, [1]);
    });
    return pieces.length === 1 ? pieces[0]! : op.concat(pieces, 0);
  });
}

/** rotate_half(x) = concat(−x₂, x₁) over the last axis, x = concat(x₁, x₂). */
function rotateHalf(x: Value, headDim: number): Value {
  const [x1, x2] = op.split(x, [headDim / 2, headDim / 2], -1);
  return op.concat([op.neg(x2!), x1!], -1);
}

/** RoPE: x·cos + rotate_half(x)·sin, cos/sin [B, T, 1, d_head] broadcast over heads. */
export function applyRope(x: Value, cos: Value, sin: Value, headDim: number): Value {
  return op.add(op.mul(x, cos), op.mul(rotateHalf(x, headDim), sin));
}

export function decoderForward(
  config: QwenConfig,
  weights: WeightValues,
  inputs: DecoderInputs,
): DecoderOutputs {
  const graph = inputs.inputIds.graph;
  const { batch: B, time: T, rows: N } = DIM;
  const H = config.num_attention_heads;
  const KV = config.num_key_value_heads;
  const G = H / KV;
  const D = config.head_dim;
  const d = config.hidden_size;
  const I = config.intermediate_size;
  const eps = config.rms_norm_eps;
  const bias = qwenBiases(config);
  const qkNorm = hasQkNorm(config);
  const ids = inputs.inputIds;

  const rowsShape = graph.ints([-1, d]);
  const embedded = op.embedding(weight(weights, "model.embed_tokens.weight"), ids); // [B, T, d]
  let x = op.reshape(embedded, rowsShape, [N, d]);
  // Scale q once instead of the scores: (q/√D) kᵀ.
  const scale = op.scalarLike(x, 1 / Math.sqrt(D));
  // One new token per row over a pre-allocated cache (the decode step): every shape is known up to
  // B, so reshapes take constant targets (no Shape/Slice/Concat kernels at run time) and attention
  // needs no transposes (see singleTokenAttention).
  const single = inputs.cache !== undefined && ids.shape[1] === 1;
  const headsShape = (heads: number) =>
    single ? graph.ints([-1, 1, heads, D]) : shapeVector(graph, [[ids, 0], [ids, 1], heads, D]);
  // The step's bias [B, 1, 1, 1, C + 1] as [B, 1, 1, C + 1], once for all layers.
  const stepBias = single
    ? op.reshape(inputs.attnBias, graph.ints([0, 1, 1, -1]), [B, 1, 1, "C+1"])
    : undefined;
  // The bias [B, 1, 1, T, S] repeated for the G stacked query heads: [B, 1, G·T, S], once for all layers.
  const rowsBias = single ? undefined : biasForStackedHeads(inputs.attnBias, G);
  const rope = (x: Value) =>
    single ? applyRopeByMatMul(x, inputs.cos, inputs.sin, D) : applyRope(x, inputs.cos, inputs.sin, D);
  const present: { k: Value; v: Value }[] = [];

  for (let i = 0; i < config.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    const w = (name: string) => weight(weights, `${p}.${name}`);
    const h = rmsNorm(x, w("input_layernorm.weight"), eps);
    // Decode graphs multiply by the fused [W_q; W_k; W_v] once and split the columns
    // (fused-weights.ts); graphs over long rows (scoring, training) keep three Gemms, where
    // splitting and re-concatenating the wide activations would cost more than the Gemms save.
    const has = (name: string) => weights.has(`${p}.${name}`);
    const proj = (name: string, rows: Value = h) =>
      op.linear(rows, w(`self_attn.${name}.weight`), bias.qkv ? w(`self_attn.${name}.bias`) : undefined);
    const mlp = (x: Value) => {
      const h2 = rmsNorm(x, w("post_attention_layernorm.weight"), eps);
      const [gate, up] = has("mlp.gate_up_proj.weight")
        ? (op.split(op.linear(h2, w("mlp.gate_up_proj.weight")), [I, I], 1) as [Value, Value])
        : [op.linear(h2, w("mlp.gate_proj.weight")), op.linear(h2, w("mlp.up_proj.weight"))];
      return op.add(x, op.linear(swiGlu(gate, up), w("mlp.down_proj.weight")));
    };
    // The last layer of a windowed graph: queries (and everything after attention) on the trailing
    // W columns only, keys and values on every column.
    const window =
      inputs.queryWindow !== undefined && i === config.num_hidden_layers - 1 && !single
        ? windowColumns(ids, inputs.queryWindow)
        : undefined;
    const Tq = window === undefined ? T : "W";
    const windowBias = window?.bias(inputs.attnBias, G);
    let [q, k, v] = has("self_attn.qkv_proj.weight")
      ? (op.split(proj("qkv_proj"), [H * D, KV * D, KV * D], 1) as [Value, Value, Value])
      : [proj("q_proj", window?.rows(h, d)), proj("k_proj"), proj("v_proj")];
    // Fused weights project every row at once; the window then keeps its own query rows.
    if (window !== undefined && has("self_attn.qkv_proj.weight")) q = window.rows(q, H * D);
    q = op.reshape(q, window?.heads(H, D) ?? headsShape(H), [B, Tq, H, D]);
    k = op.reshape(k, headsShape(KV), [B, T, KV, D]);
    if (qkNorm) {
      q = rmsNorm(q, w("self_attn.q_norm.weight"), eps);
      k = rmsNorm(k, w("self_attn.k_norm.weight"), eps);
    }
    q =
      window === undefined
        ? rope(q)
        : applyRope(q, window.columns(inputs.cos), window.columns(inputs.sin), D);
    k = rope(k);
    if (single) {
      const step = singleTokenAttention(op.mul(q, scale), k, v, inputs.cache![i]!, stepBias!, { KV, G, D });
      present.push(step.present);
      x = op.add(
        x,
        op.linear(step.merged, w("self_attn.o_proj.weight"), bias.o ? w("self_attn.o_proj.bias") : undefined),
      );
      x = mlp(x);
      continue;
    }
    // q: [B, T, H, D] → [B, H, T, D] → [B, KV, G·T, D] (head h = kv·G + g, as HF's repeat_kv): the
    // G query heads of a KV head are stacked as rows of one matrix, so q kᵀ and p v are plain
    // batched products over B·KV (no broadcast over G, and no ReduceSum over G in the gradient).
    const qHeads = op.reshape(op.transpose(op.mul(q, scale), [0, 2, 1, 3]), graph.ints([0, KV, -1, D]), [
      B,
      KV,
      `${G}*${Tq}`,
      D,
    ]);
    let kHeads = op.transpose(k, [0, 2, 1, 3]); // [B, KV, T, D]
    let vHeads = op.transpose(op.reshape(v, headsShape(KV), [B, T, KV, D]), [0, 2, 1, 3]);
    const past = inputs.past?.[i];
    if (past !== undefined) {
      kHeads = op.concat([past.k, kHeads], 2);
      vHeads = op.concat([past.v, vHeads], 2);
    }
    present.push({ k: kHeads, v: vHeads });
    const cache = inputs.cache?.[i];
    const context =
      cache === undefined
        ? attention(qHeads, kHeads, vHeads, windowBias ?? rowsBias!)
        : cachedAttention(qHeads, kHeads, vHeads, cache, windowBias ?? rowsBias!);
    const merged = op.reshape(
      op.transpose(op.reshape(context, graph.ints([0, H, -1, D]), [B, H, Tq, D]), [0, 2, 1, 3]),
      graph.ints([-1, H * D]),
      [N, H * D],
    );
    const attnOut = op.linear(
      merged,
      w("self_attn.o_proj.weight"),
      bias.o ? w("self_attn.o_proj.bias") : undefined,
    );
    x = op.add(window?.rows(x, d) ?? x, attnOut);
    x = mlp(x);
  }
  return { hidden: rmsNorm(x, weight(weights, "model.norm.weight"), eps), present };
}

/**
 * The trailing W columns of a [B, T, …] batch (ids [B, T]), for the last layer of a `queryWindow`
 * graph: `rows(x, d)` takes rows [B·T, d] to [B·W, d], `columns(t)` a [B, T, …] host input to
 * [B, W, …], `heads(n, D)` is the runtime shape [B, W, n, D], `bias(b, G)` the attention bias of
 * the W query columns for G stacked heads.
 */
function windowColumns(ids: Value, W: Value) {
  const graph = ids.graph;
  const B = DIM.batch;
  return {
    rows(x: Value, d: number): Value {
      const byBatch = op.reshape(x, shapeVector(graph, [[ids, 0], [ids, 1], d]), [B, DIM.time, d]);
      return op.reshape(op.trailing(byBatch, 1, W, [B, "W", d]), graph.ints([-1, d]), [DIM.rows, d]);
    },
    columns(t: Value): Value {
      return graph.untaped(() => op.trailing(t, 1, W, [B, "W", ...t.shape.slice(2)]));
    },
    heads(n: number, D: number): Value {
      return graph.untaped(() => op.concat([shapeVector(graph, [[ids, 0]]), W, graph.ints([n, D])], 0));
    },
    bias(attnBias: Value, G: number): Value {
      const rows = graph.untaped(() => op.trailing(attnBias, 3, W, [B, 1, 1, "W", attnBias.shape[4]!]));
      return biasForStackedHeads(rows, G);
    },
  };
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

/**
 * Attention of one new token per row over a pre-allocated cache [B, KV, C, d_head]. With T = 1 the
 * heads need no transposes: q [B, 1, H, D] is [B, KV, G, D] (head h = kv·G + g) and the new k, v
 * are [B, KV, 1, D] by reshapes alone. Scores of the cache columns and of the token itself are
 * concatenated, normalised by one softmax with the bias [B, 1, 1, C + 1], and split again by
 * static slices (the last column is the token's own).
 * Returns the merged heads [B, H·D] and the token's key/value [B, KV, 1, D] for the cache.
 */
function singleTokenAttention(
  q: Value,
  k: Value,
  v: Value,
  cache: { readonly k: Value; readonly v: Value },
  bias: Value,
  dims: { readonly KV: number; readonly G: number; readonly D: number },
): { merged: Value; present: { k: Value; v: Value } } {
  const graph = q.graph;
  const { KV, G, D } = dims;
  return graph.untaped(() => {
    const B = DIM.batch;
    const q4 = op.reshape(q, graph.ints([-1, KV, G, D]), [B, KV, G, D]);
    const k4 = op.reshape(k, graph.ints([-1, KV, 1, D]), [B, KV, 1, D]);
    const v4 = op.reshape(v, graph.ints([-1, KV, 1, D]), [B, KV, 1, D]);
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

/** Attention bias [B, 1, 1, T, S] → [B, 1, G·T, S] (copied G times), matching q's stacked heads. */
function biasForStackedHeads(bias: Value, G: number): Value {
  const graph = bias.graph;
  return graph.untaped(() => {
    const [B, , , T, S] = bias.shape;
    const repeated = op.expand(bias, graph.ints([1, 1, G, 1, 1]), [B!, 1, G, T!, S!]);
    return op.reshape(repeated, shapeVector(graph, [[bias, 0], 1, -1, [bias, 4]]), [B!, 1, `${G}*${T}`, S!]);
  });
}

/** softmax(q kᵀ + bias) v with q [B, KV, G·T, D] (already scaled), k, v [B, KV, S, D] → [B, KV, G·T, D]. */
function attention(q: Value, k: Value, v: Value, bias: Value): Value {
  const scores = op.add(op.matmul(q, op.transpose(k, [0, 1, 3, 2])), bias); // [B, KV, G·T, S]
  return op.matmul(op.softmax(scores, -1), v);
}

/**
 * Attention over a pre-allocated cache [B, KV, C, D] followed by the T new keys/values, without
 * joining them: the scores of both blocks are concatenated (a [B, KV, G·T, C + T] tensor, small
 * next to the cache), one softmax normalises over both, and the probabilities are split again to
 * weight each block's values. Prefill of the cached decode (no gradient rules needed).
 */
function cachedAttention(
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
 * SwiGLU y = SiLU(a) · b as one composite with a closed-form gradient (s = σ(a), u = a·s):
 *   ∂b = g · u,   ∂a = g · b · s(1 + a(1 − s)) = (g · b) · (s + u − u·s)
 * three [N, I] products in the backward pass instead of the five of SiLU's and Mul's rules.
 */
export function swiGlu(a: Value, b: Value): Value {
  const graph = a.graph;
  let s: Value | undefined;
  let u: Value | undefined;
  const [y] = graph.composite(
    "SwiGLU",
    [a, b],
    () => {
      s = op.sigmoid(a);
      u = op.mul(a, s);
      return [op.mul(u, b)];
    },
    ([g], [needA, needB]) => {
      if (!g) return [undefined, undefined];
      const dA = needA ? op.mul(op.mul(g, b), op.sub(op.add(s!, u!), op.mul(u!, s!))) : undefined;
      return [dA, needB ? op.mul(g, u!) : undefined];
    },
  );
  return y!;
}

/**
 * logits = hidden W_lmᵀ, [N, V]; with `vocab` < V only the first `vocab` rows of the head are used
 * ([N, vocab]): ids a tokenizer cannot produce (a vocabulary padded past the tokenizer's) are left
 * out of the softmax, so scoring and sampling use the same distribution.
 */
export function lmHead(
  config: QwenConfig,
  weights: WeightValues,
  hidden: Value,
  vocab = config.vocab_size,
): Value {
  const name = config.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  const w = weight(weights, name);
  return op.linear(hidden, vocab === config.vocab_size ? w : op.leadingRows(w, vocab));
}
