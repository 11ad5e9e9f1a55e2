/**
 * A plain, float64 forward pass of the Qwen2/Qwen3 decoder, written to be read, not to be fast: the
 * independent oracle the engines are tested against. It follows HF `modeling_qwen2.py` /
 * `modeling_qwen3.py` step by step (eval mode, no dropout, no cache):
 *
 *   x₀ = E[tokens]                                           E: embed_tokens [V, H]
 *   for each layer:
 *     h   = RMSNorm(x; w_in)                                 RMSNorm(x) = x / √(mean(x²) + eps) · w
 *     q   = h W_qᵀ (+ b_q),  k = h W_kᵀ (+ b_k),  v = h W_vᵀ (+ b_v)   split into heads of head_dim
 *     q,k = RMSNorm per head (qwen3 q_norm / k_norm)
 *     q,k = RoPE(q, k, position)
 *     a   = softmax(q kᵀ / √head_dim + causal mask) v     query head j reads kv head ⌊j / (heads/kv_heads)⌋
 *     x   = x + a W_oᵀ (+ b_o)
 *     h   = RMSNorm(x; w_post)
 *     x   = x + W_down (silu(W_gate h) ⊙ W_up h)            silu(z) = z · σ(z)
 *   logits = RMSNorm(x; w_final) Wᵀ                         W = lm_head, or E when tied
 *
 * RoPE (HF convention, "rotate_half"): with d = head_dim, inv_freq_i = θ^(−2i/d) for i < d/2 and
 * angle_i = position · inv_freq_i, the pairs (x_i, x_{i+d/2}) rotate by angle_i:
 *   x'_i       = x_i cos − x_{i+d/2} sin
 *   x'_{i+d/2} = x_{i+d/2} cos + x_i sin
 *
 * Imported as `@troupe/engine/reference` (tests only). The same model, built to run: as ONNX graph
 * nodes for the embedded engine (libs/engine-onnx/src/model/, starting at decoder.ts), and in
 * PyTorch for the GPU worker (apps/engine-torch/troupe_worker/qwen.py); the tests of both compare
 * against this file.
 */
import { hasQkNorm, type QwenConfig, qwenBiases } from "./model-config.ts";
import { logSoftmax } from "./sampler.ts";
import type { Weights } from "./tensor.ts";
import { checkWeightsAgainstConfig } from "./weights.ts";

/** A row-major matrix of float64 rows. */
type Rows = Float64Array[];

function get(weights: Weights, name: string): Float32Array {
  const t = weights.get(name);
  if (t === undefined) throw new Error(`qwen reference: missing tensor ${name}`);
  return t.data;
}

/** y = x Wᵀ + b for one row, W stored [out, in] as torch.nn.Linear. */
export function linear(x: Float64Array, w: Float32Array, out: number, bias?: Float32Array): Float64Array {
  const inDim = x.length;
  if (w.length !== out * inDim)
    throw new Error(`linear: weight has ${w.length} values, expected ${out}×${inDim}`);
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = bias === undefined ? 0 : bias[o]!;
    const base = o * inDim;
    for (let i = 0; i < inDim; i++) s += w[base + i]! * x[i]!;
    y[o] = s;
  }
  return y;
}

/** RMSNorm(x) = x / √(mean(x²) + eps) · w. */
export function rmsNorm(x: ArrayLike<number>, weight: ArrayLike<number>, eps: number): Float64Array {
  let meanSquare = 0;
  for (let i = 0; i < x.length; i++) meanSquare += x[i]! * x[i]!;
  meanSquare /= x.length;
  const scale = 1 / Math.sqrt(meanSquare + eps);
  const y = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = x[i]! * scale * weight[i]!;
  return y;
}

/** RoPE on one head vector at one position (HF rotate_half convention); returns a new vector. */
export function applyRope(x: ArrayLike<number>, position: number, theta: number): Float64Array {
  const d = x.length;
  const half = d / 2;
  const y = new Float64Array(d);
  for (let i = 0; i < half; i++) {
    const angle = position * theta ** ((-2 * i) / d);
    const cos = Math.cos(angle);
    const sin = Math.sin(angle);
    y[i] = x[i]! * cos - x[i + half]! * sin;
    y[i + half] = x[i + half]! * cos + x[i]! * sin;
  }
  return y;
}

export function silu(z: number): number {
  return z / (1 + Math.exp(-z));
}

/** Softmax of a row (float64). */
function softmax(scores: Float64Array): Float64Array {
  const logp = logSoftmax(scores);
  return logp.map(Math.exp);
}

/**
 * Causal grouped-query attention for all positions of one sequence.
 * q: [T][heads·d], k, v: [T][kvHeads·d] (after norms and RoPE); returns [T][heads·d].
 */
export function causalAttention(
  q: Rows,
  k: Rows,
  v: Rows,
  heads: number,
  kvHeads: number,
  headDim: number,
): Rows {
  const T = q.length;
  const group = heads / kvHeads;
  const scale = 1 / Math.sqrt(headDim);
  const out: Rows = Array.from({ length: T }, () => new Float64Array(heads * headDim));
  for (let h = 0; h < heads; h++) {
    const kvh = Math.floor(h / group);
    for (let t = 0; t < T; t++) {
      // Position t attends to positions 0..t only.
      const scores = new Float64Array(t + 1);
      for (let s = 0; s <= t; s++) {
        let dot = 0;
        for (let i = 0; i < headDim; i++) dot += q[t]![h * headDim + i]! * k[s]![kvh * headDim + i]!;
        scores[s] = dot * scale;
      }
      const p = softmax(scores);
      for (let s = 0; s <= t; s++) {
        for (let i = 0; i < headDim; i++) out[t]![h * headDim + i]! += p[s]! * v[s]![kvh * headDim + i]!;
      }
    }
  }
  return out;
}

/** The final hidden states [T][H] (after the last RMSNorm). */
export function qwenReferenceHidden(config: QwenConfig, weights: Weights, tokenIds: readonly number[]): Rows {
  checkWeightsAgainstConfig(weights, config);
  const H = config.hidden_size;
  const D = config.head_dim;
  const heads = config.num_attention_heads;
  const kvHeads = config.num_key_value_heads;
  const I = config.intermediate_size;
  const eps = config.rms_norm_eps;
  const bias = qwenBiases(config);
  if (tokenIds.length === 0) throw new Error("qwen reference: no tokens");
  if (tokenIds.length > config.max_position_embeddings) {
    throw new Error(
      `qwen reference: ${tokenIds.length} tokens exceed max_position_embeddings ${config.max_position_embeddings}`,
    );
  }
  const embed = get(weights, "model.embed_tokens.weight");
  let x: Rows = tokenIds.map((id, t) => {
    if (!Number.isInteger(id) || id < 0 || id >= config.vocab_size) {
      throw new Error(`qwen reference: token ${t} has id ${id}, outside [0, ${config.vocab_size})`);
    }
    return Float64Array.from(embed.subarray(id * H, (id + 1) * H));
  });

  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const p = `model.layers.${layer}`;
    const w = (name: string) => get(weights, `${p}.${name}`);
    // Attention block.
    const qs: Rows = [];
    const ks: Rows = [];
    const vs: Rows = [];
    x.forEach((row, t) => {
      const h = rmsNorm(row, w("input_layernorm.weight"), eps);
      let q = linear(
        h,
        w("self_attn.q_proj.weight"),
        heads * D,
        bias.qkv ? w("self_attn.q_proj.bias") : undefined,
      );
      let k = linear(
        h,
        w("self_attn.k_proj.weight"),
        kvHeads * D,
        bias.qkv ? w("self_attn.k_proj.bias") : undefined,
      );
      const v = linear(
        h,
        w("self_attn.v_proj.weight"),
        kvHeads * D,
        bias.qkv ? w("self_attn.v_proj.bias") : undefined,
      );
      const perHead = (vec: Float64Array, n: number, f: (head: Float64Array) => Float64Array) => {
        const y = new Float64Array(vec.length);
        for (let j = 0; j < n; j++) y.set(f(vec.subarray(j * D, (j + 1) * D)), j * D);
        return y;
      };
      if (hasQkNorm(config)) {
        q = perHead(q, heads, (head) => rmsNorm(head, w("self_attn.q_norm.weight"), eps));
        k = perHead(k, kvHeads, (head) => rmsNorm(head, w("self_attn.k_norm.weight"), eps));
      }
      qs.push(perHead(q, heads, (head) => applyRope(head, t, config.rope_theta)));
      ks.push(perHead(k, kvHeads, (head) => applyRope(head, t, config.rope_theta)));
      vs.push(v);
    });
    const attention = causalAttention(qs, ks, vs, heads, kvHeads, D);
    x = x.map((row, t) => {
      const o = linear(
        attention[t]!,
        w("self_attn.o_proj.weight"),
        H,
        bias.o ? w("self_attn.o_proj.bias") : undefined,
      );
      return row.map((value, i) => value + o[i]!);
    });
    // MLP block (SwiGLU).
    x = x.map((row) => {
      const h = rmsNorm(row, w("post_attention_layernorm.weight"), eps);
      const gate = linear(h, w("mlp.gate_proj.weight"), I);
      const up = linear(h, w("mlp.up_proj.weight"), I);
      const act = gate.map((g, i) => silu(g) * up[i]!);
      const down = linear(act, w("mlp.down_proj.weight"), H);
      return row.map((value, i) => value + down[i]!);
    });
  }
  const finalNorm = get(weights, "model.norm.weight");
  return x.map((row) => rmsNorm(row, finalNorm, eps));
}

/** Logits for every position, [T, V] row-major: row t scores the token at position t + 1. */
export function qwenReferenceLogits(
  config: QwenConfig,
  weights: Weights,
  tokenIds: readonly number[],
): Float64Array {
  const hidden = qwenReferenceHidden(config, weights, tokenIds);
  const V = config.vocab_size;
  const head = config.tie_word_embeddings
    ? get(weights, "model.embed_tokens.weight")
    : get(weights, "lm_head.weight");
  const logits = new Float64Array(hidden.length * V);
  hidden.forEach((h, t) => {
    logits.set(linear(h, head, V), t * V);
  });
  return logits;
}

/**
 * log p(completion_j | prompt, completion_<j) for each completion token, under the raw model
 * distribution (softmax of the logits, temperature 1).
 */
export function qwenReferenceLogprobs(
  config: QwenConfig,
  weights: Weights,
  promptIds: readonly number[],
  completionIds: readonly number[],
): number[] {
  if (promptIds.length === 0) throw new Error("qwen reference: the prompt needs at least one token");
  if (completionIds.length === 0) return [];
  const ids = [...promptIds, ...completionIds];
  // The last token predicts nothing we score: run the forward on all but it.
  const logits = qwenReferenceLogits(config, weights, ids.slice(0, -1));
  const V = config.vocab_size;
  return completionIds.map((token, j) => {
    const row = promptIds.length - 1 + j;
    return logSoftmax(logits.subarray(row * V, (row + 1) * V))[token]!;
  });
}
