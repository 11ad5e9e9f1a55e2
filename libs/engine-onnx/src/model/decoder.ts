/**
 * The Qwen2 / Qwen3 decoder as graph-building functions (HF `modeling_qwen2/3.py`, same math):
 *
 *   x = embed[ids]
 *   per layer:  h = RMSNorm(x)
 *               q, k, v = h W_qᵀ (+b), h W_kᵀ (+b), h W_vᵀ (+b)        one fused Gemm, split into heads
 *               qwen3: q, k = RMSNorm_head(q), RMSNorm_head(k)           (over head_dim)
 *               q, k = RoPE(q), RoPE(k)                                   (rotate_half convention)
 *               k, v = concat(past, new)                                   (KV cache, decode only)
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
  /** Per layer cached keys/values [B, KV, P, d_head] (decode graphs only). */
  readonly past?: readonly { readonly k: Value; readonly v: Value }[];
}

export interface DecoderOutputs {
  /** Final-normed hidden states, rows [N, d]. */
  readonly hidden: Value;
  /** Per layer keys/values including the new tokens, [B, KV, S, d_head]. */
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
  const headsShape = (heads: number) => shapeVector(graph, [[ids, 0], [ids, 1], heads, D]);
  const present: { k: Value; v: Value }[] = [];

  for (let i = 0; i < config.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    const w = (name: string) => weight(weights, `${p}.${name}`);
    const h = rmsNorm(x, w("input_layernorm.weight"), eps);
    // Decode graphs multiply by the fused [W_q; W_k; W_v] once and split the columns
    // (fused-weights.ts); graphs over long rows (scoring, training) keep three Gemms, where
    // splitting and re-concatenating the wide activations would cost more than the Gemms save.
    const has = (name: string) => weights.has(`${p}.${name}`);
    const proj = (name: string) =>
      op.linear(h, w(`self_attn.${name}.weight`), bias.qkv ? w(`self_attn.${name}.bias`) : undefined);
    let [q, k, v] = has("self_attn.qkv_proj.weight")
      ? (op.split(proj("qkv_proj"), [H * D, KV * D, KV * D], 1) as [Value, Value, Value])
      : [proj("q_proj"), proj("k_proj"), proj("v_proj")];
    q = op.reshape(q, headsShape(H), [B, T, H, D]);
    k = op.reshape(k, headsShape(KV), [B, T, KV, D]);
    if (qkNorm) {
      q = rmsNorm(q, w("self_attn.q_norm.weight"), eps);
      k = rmsNorm(k, w("self_attn.k_norm.weight"), eps);
    }
    q = applyRope(q, inputs.cos, inputs.sin, D);
    k = applyRope(k, inputs.cos, inputs.sin, D);
    // q: [B, T, H, D] → [B, H, T, D] → [B, KV, G, T, D] (head h = kv·G + g, as HF's repeat_kv).
    const qHeads = op.reshape(op.transpose(op.mul(q, scale), [0, 2, 1, 3]), graph.ints([0, KV, G, -1, D]), [
      B,
      KV,
      G,
      T,
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
    const S = kHeads.shape[2]!;
    const k5 = op.reshape(kHeads, graph.ints([0, 0, 1, -1, D]), [B, KV, 1, S, D]);
    const v5 = op.reshape(vHeads, graph.ints([0, 0, 1, -1, D]), [B, KV, 1, S, D]);
    const scores = op.add(op.matmul(qHeads, op.transpose(k5, [0, 1, 2, 4, 3])), inputs.attnBias); // [B,KV,G,T,S]
    const probs = op.softmax(scores, -1);
    const context = op.matmul(probs, v5); // [B, KV, G, T, D]
    const merged = op.reshape(
      op.transpose(op.reshape(context, graph.ints([0, H, -1, D]), [B, H, T, D]), [0, 2, 1, 3]),
      graph.ints([-1, H * D]),
      [N, H * D],
    );
    const attnOut = op.linear(
      merged,
      w("self_attn.o_proj.weight"),
      bias.o ? w("self_attn.o_proj.bias") : undefined,
    );
    x = op.add(x, attnOut);
    const h2 = rmsNorm(x, w("post_attention_layernorm.weight"), eps);
    const [gate, up] = has("mlp.gate_up_proj.weight")
      ? (op.split(op.linear(h2, w("mlp.gate_up_proj.weight")), [I, I], 1) as [Value, Value])
      : [op.linear(h2, w("mlp.gate_proj.weight")), op.linear(h2, w("mlp.up_proj.weight"))];
    x = op.add(x, op.linear(swiGlu(gate, up), w("mlp.down_proj.weight")));
  }
  return { hidden: rmsNorm(x, weight(weights, "model.norm.weight"), eps), present };
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

/** logits = hidden W_lmᵀ, [N, V]. */
export function lmHead(config: QwenConfig, weights: WeightValues, hidden: Value): Value {
  const name = config.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  return op.linear(hidden, weight(weights, name));
}
