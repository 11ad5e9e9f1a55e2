import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type QwenConfig, tinyQwenConfig } from "../src/model-config.ts";
import {
  applyRope,
  causalAttention,
  qwenReferenceLogits,
  qwenReferenceLogprobs,
  rmsNorm,
  silu,
} from "../src/qwen-reference.ts";
import { logSoftmax } from "../src/sampler.ts";
import type { Weights } from "../src/tensor.ts";
import { MICRO_QWEN_SHAPE } from "../src/testing.ts";
import { initQwenWeights, qwenWeightNames } from "../src/weights.ts";

const close = (actual: ArrayLike<number>, expected: number[], digits = 9) => {
  expect(actual.length).toBe(expected.length);
  expected.forEach((e, i) => expect(actual[i]).toBeCloseTo(e, digits));
};

describe("pieces", () => {
  it("RMSNorm divides by √(mean x² + eps) and scales by the weight", () => {
    // mean x² = (1 + 4 + 9 + 16)/4 = 7.5, 1/√7.5 = 0.36514837
    close(
      rmsNorm([1, 2, 3, 4], [1, 1, 1, 1], 0),
      [0.36514837167, 0.73029674334, 1.09544511501, 1.46059348668],
    );
    close(
      rmsNorm([1, 2, 3, 4], [2, 1, 1, 0.5], 0),
      [0.73029674334, 0.73029674334, 1.09544511501, 0.73029674334],
    );
    close(rmsNorm([0, 0], [1, 1], 0.25), [0, 0]); // eps keeps 0/0 away
    close(rmsNorm([1, 1], [1, 1], 3), [0.5, 0.5]); // 1/√(1 + 3)
  });

  it("RoPE rotates (x_i, x_{i+d/2}) by position·θ^(−2i/d), HF rotate_half layout", () => {
    // d = 4, θ = 10000: inv_freq = [1, 10000^(−1/2) = 0.01]. Position 1, x = [1, 2, 3, 4]:
    //   y0 = 1·cos 1 − 3·sin 1 = −1.98411065,   y2 = 3·cos 1 + 1·sin 1 = 2.46237790
    //   y1 = 2·cos .01 − 4·sin .01 = 1.95990067, y3 = 4·cos .01 + 2·sin .01 = 4.01979967
    close(applyRope([1, 2, 3, 4], 1, 10000), [-1.98411064856, 1.9599006675, 2.46237790241, 4.01979966833]);
    close(applyRope([1, 2, 3, 4], 0, 10000), [1, 2, 3, 4]);
  });

  it("RoPE preserves norms and makes q·k depend only on the offset (property)", () => {
    const vec = fc.array(fc.double({ min: -3, max: 3, noNaN: true }), { minLength: 8, maxLength: 8 });
    fc.assert(
      fc.property(
        vec,
        vec,
        fc.integer({ min: 0, max: 500 }),
        fc.integer({ min: 0, max: 500 }),
        (q, k, m, shift) => {
          const dot = (a: ArrayLike<number>, b: ArrayLike<number>) =>
            Array.from(a).reduce((s, x, i) => s + x * b[i]!, 0);
          expect(dot(applyRope(q, m, 1e4), applyRope(q, m, 1e4))).toBeCloseTo(dot(q, q), 9);
          const near = dot(applyRope(q, m + 3, 1e4), applyRope(k, m, 1e4));
          const far = dot(applyRope(q, m + 3 + shift, 1e4), applyRope(k, m + shift, 1e4));
          expect(far).toBeCloseTo(near, 8);
        },
      ),
      { numRuns: 50 },
    );
  });

  it("attention is causal softmax(q·k/√d)·v", () => {
    // One head, d = 2. Position 0 sees only itself → v0. Position 1: scores [q1·k0, q1·k1]/√2 = [0, √2],
    // p = [1, e^√2]/(1 + e^√2) = [0.19557032, 0.80442968] → out = [1 + 2·p1, 2 + 2·p1].
    const q = [Float64Array.of(1, 0), Float64Array.of(0, 1)];
    const k = [Float64Array.of(1, 0), Float64Array.of(0, 2)];
    const v = [Float64Array.of(1, 2), Float64Array.of(3, 4)];
    const out = causalAttention(q, k, v, 1, 1, 2);
    close(out[0]!, [1, 2]);
    close(out[1]!, [2.608859365014, 3.608859365014]);
  });

  it("attention maps query head j to kv head ⌊j / (heads/kvHeads)⌋", () => {
    // 2 query heads share 1 kv head (d = 1): both read the same v.
    const out = causalAttention(
      [Float64Array.of(1, -1)],
      [Float64Array.of(5)],
      [Float64Array.of(7)],
      2,
      1,
      1,
    );
    close(out[0]!, [7, 7]);
  });

  it("silu(z) = z·σ(z)", () => {
    expect(silu(0)).toBe(0);
    expect(silu(2)).toBeCloseTo(2 / (1 + Math.exp(-2)), 14);
  });
});

/** vocab 5, hidden 4, one head of 4, intermediate 4; every weight zero but those set. */
function handConfig(overrides: Partial<QwenConfig> = {}): QwenConfig {
  return tinyQwenConfig({
    vocab_size: 5,
    hidden_size: 4,
    intermediate_size: 4,
    num_hidden_layers: 1,
    num_attention_heads: 1,
    num_key_value_heads: 1,
    head_dim: 4,
    rms_norm_eps: 1e-12,
    bos_token_id: null,
    eos_token_id: null,
    pad_token_id: null,
    ...overrides,
  });
}
const EMBED = [
  [1, 0, 0, 0],
  [0, 2, 0, 0],
  [1, 1, 1, 1],
  [0, 0, 0, 3],
  [1, -1, 1, -1],
];
const IDENTITY4 = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];

function handWeights(config: QwenConfig, set: Record<string, number[]>): Weights {
  const weights: Weights = new Map();
  for (const spec of qwenWeightNames(config)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    if (spec.kind === "norm") data.fill(1);
    weights.set(spec.name, { shape: [...spec.shape], data });
  }
  weights.get("model.embed_tokens.weight")!.data.set(EMBED.flat());
  for (const [name, values] of Object.entries(set)) weights.get(name)!.data.set(values);
  return weights;
}

const rows = (logits: Float64Array, V: number) =>
  Array.from({ length: logits.length / V }, (_, t) => Array.from(logits.subarray(t * V, (t + 1) * V)));

describe("qwenReferenceLogits on a hand-checkable model", () => {
  // W_q = W_k = 0 → every score is 0 → position t averages v over positions 0..t.
  // W_v = W_o = I, MLP 0: x_t = e_t + mean_{s≤t} RMSNorm(e_s); logits_t = E · RMSNorm(x_t) (tied head).
  //   tokens [0, 1]: RMSNorm(e0) = [1,0,0,0]/√0.25 = [2,0,0,0];  RMSNorm(e1) = [0,2,0,0]/√1 = [0,2,0,0]
  //   x0 = [1,0,0,0] + [2,0,0,0] = [3,0,0,0]           → h0 = [2,0,0,0]       → logits0 = E·h0 = [2,0,2,0,2]
  //   x1 = [0,2,0,0] + ([2,0,0,0]+[0,2,0,0])/2 = [1,3,0,0], mean x² = 2.5 → h1 = [1,3,0,0]/√2.5
  //        = [0.63245553, 1.89736660, 0, 0] → logits1 = [0.63245553, 3.79473319, 2.52982213, 0, −1.26491106]
  const attentionOnly = {
    "model.layers.0.self_attn.v_proj.weight": IDENTITY4,
    "model.layers.0.self_attn.o_proj.weight": IDENTITY4,
  };

  it("averages values causally, then applies the final norm and the tied head", () => {
    const config = handConfig();
    const logits = rows(qwenReferenceLogits(config, handWeights(config, attentionOnly), [0, 1]), 5);
    close(logits[0]!, [2, 0, 2, 0, 2]);
    close(logits[1]!, [0.632455532034, 3.794733192202, 2.529822128135, 0, -1.264911064067]);
  });

  it("adds the SwiGLU MLP: down(silu(gate h) ⊙ up h)", () => {
    // gate = up = down = I: the MLP adds silu(h)⊙h with h = RMSNorm(x) = [0.63245553, 1.89736660, 0, 0] at t = 1.
    const config = handConfig();
    const weights = handWeights(config, {
      ...attentionOnly,
      "model.layers.0.mlp.gate_proj.weight": IDENTITY4,
      "model.layers.0.mlp.up_proj.weight": IDENTITY4,
      "model.layers.0.mlp.down_proj.weight": IDENTITY4,
    });
    const h = [1 / Math.sqrt(2.5), 3 / Math.sqrt(2.5)];
    const x = [1 + (h[0]! * h[0]!) / (1 + Math.exp(-h[0]!)), 3 + (h[1]! * h[1]!) / (1 + Math.exp(-h[1]!))]; // [1.26122, 6.13067]
    const rms = Math.sqrt((x[0]! ** 2 + x[1]! ** 2) / 4);
    const final = [x[0]! / rms, x[1]! / rms, 0, 0];
    const expected = EMBED.map((e) => e.reduce((s, w, i) => s + w * final[i]!, 0));
    const logits = rows(qwenReferenceLogits(config, weights, [0, 1]), 5);
    close(logits[1]!, expected);
    close(logits[0]!, [2, 0, 2, 0, 2]); // t = 0: x stays along e0, its norm is again [2,0,0,0]
  });

  it("adds q/k/v biases (qwen2): a v bias b shifts every attention output by W_o·b", () => {
    // Softmax weights sum to 1, so v_s + b averages to mean(v) + b: x0 = [3,0,0,0] + [0,0,0.5,0].
    const config = handConfig({ model_type: "qwen2" });
    const weights = handWeights(config, {
      ...attentionOnly,
      "model.layers.0.self_attn.v_proj.bias": [0, 0, 0.5, 0],
    });
    const x0 = [3, 0, 0.5, 0];
    const rms = Math.sqrt((9 + 0.25) / 4);
    const expected = EMBED.map((e) => e.reduce((s, w, i) => s + (w * x0[i]!) / rms, 0));
    close(rows(qwenReferenceLogits(config, weights, [0]), 5)[0]!, expected);
  });

  it("adds the o_proj bias when a qwen3 config has attention_bias", () => {
    const config = handConfig({ attention_bias: true });
    const weights = handWeights(config, {
      ...attentionOnly,
      "model.layers.0.self_attn.o_proj.bias": [0, 0, 0.5, 0],
    });
    const x0 = [3, 0, 0.5, 0];
    const rms = Math.sqrt((9 + 0.25) / 4);
    close(
      rows(qwenReferenceLogits(config, weights, [0]), 5)[0]!,
      EMBED.map((e) => e.reduce((s, w, i) => s + (w * x0[i]!) / rms, 0)),
    );
  });

  it("applies qwen3's q_norm: a zero q_norm weight makes attention uniform again", () => {
    // W_q = W_k = I make attention non-uniform; q_norm.weight = 0 zeroes q after the projection.
    const config = handConfig();
    const sharp = {
      ...attentionOnly,
      "model.layers.0.self_attn.q_proj.weight": IDENTITY4,
      "model.layers.0.self_attn.k_proj.weight": IDENTITY4,
    };
    const uniform = rows(qwenReferenceLogits(config, handWeights(config, attentionOnly), [0, 1]), 5);
    const peaked = rows(qwenReferenceLogits(config, handWeights(config, sharp), [0, 1]), 5);
    expect(peaked[1]![1]).not.toBeCloseTo(uniform[1]![1]!, 3);
    const normed = rows(
      qwenReferenceLogits(
        config,
        handWeights(config, { ...sharp, "model.layers.0.self_attn.q_norm.weight": [0, 0, 0, 0] }),
        [0, 1],
      ),
      5,
    );
    close(normed[1]!, uniform[1]!);
  });

  it("uses lm_head.weight when embeddings are untied", () => {
    const config = handConfig({ tie_word_embeddings: false });
    const head = [0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
    const weights = handWeights(config, { ...attentionOnly, "lm_head.weight": head });
    close(
      rows(qwenReferenceLogits(config, weights, [0, 1]), 5)[1]!,
      [0, 0.632455532034, 1.897366596101, 0, 0],
    );
  });
});

describe("qwenReferenceLogits invariants", () => {
  const config = tinyQwenConfig({
    vocab_size: 11,
    ...MICRO_QWEN_SHAPE,
    initializer_range: 0.5,
    bos_token_id: null,
    eos_token_id: null,
    pad_token_id: null,
  });
  const weights = initQwenWeights(config, 3);
  const V = config.vocab_size;
  const tokens = fc.array(fc.integer({ min: 0, max: V - 1 }), { minLength: 2, maxLength: 8 });

  it("is causal: changing a later token never changes earlier logits (property)", () => {
    fc.assert(
      fc.property(tokens, fc.nat(), fc.integer({ min: 0, max: V - 1 }), (ids, at, replacement) => {
        const t = 1 + (at % (ids.length - 1));
        const changed = ids.map((id, i) => (i === t ? replacement : id));
        const a = qwenReferenceLogits(config, weights, ids);
        const b = qwenReferenceLogits(config, weights, changed);
        expect(Array.from(b.subarray(0, t * V))).toEqual(Array.from(a.subarray(0, t * V)));
      }),
      { numRuns: 20 },
    );
  });

  it("gives log-probs ≤ 0 equal to the log-softmax of the scoring row", () => {
    const prompt = [1, 5, 2];
    const completion = [7, 0, 10];
    const logprobs = qwenReferenceLogprobs(config, weights, prompt, completion);
    const logits = qwenReferenceLogits(config, weights, [...prompt, ...completion]);
    completion.forEach((token, j) => {
      const row = logits.subarray((prompt.length - 1 + j) * V, (prompt.length + j) * V);
      const logp = logSoftmax(row);
      expect(logprobs[j]).toBeLessThanOrEqual(0);
      expect(logprobs[j]).toBeCloseTo(logp[token]!, 12);
      expect(Array.from(logp).reduce((s, l) => s + Math.exp(l), 0)).toBeCloseTo(1, 12);
    });
    expect(Math.max(...logprobs)).toBeLessThan(0);
    expect(new Set(logprobs).size).toBe(3); // the weights are not trivial
    expect(qwenReferenceLogprobs(config, weights, prompt, [])).toEqual([]);
  });

  it("GQA equals full attention with each kv head duplicated for its query group", () => {
    const full = { ...config, num_key_value_heads: 4 };
    const dup: Weights = new Map();
    for (const spec of qwenWeightNames(full)) {
      const src = weights.get(spec.name)!;
      if (/\.(k|v)_proj\.weight$/.test(spec.name)) {
        // Full kv head j = GQA kv head ⌊j/2⌋: rows [j·d, (j+1)·d) of the [kv·d, H] matrix.
        const d = config.head_dim;
        const H = config.hidden_size;
        const data = new Float32Array(4 * d * H);
        for (let j = 0; j < 4; j++)
          data.set(src.data.subarray(Math.floor(j / 2) * d * H, (Math.floor(j / 2) + 1) * d * H), j * d * H);
        dup.set(spec.name, { shape: [...spec.shape], data });
      } else dup.set(spec.name, src);
    }
    const ids = [3, 1, 4, 1, 5];
    const a = qwenReferenceLogits(config, weights, ids);
    const b = qwenReferenceLogits(full, dup, ids);
    close(b, Array.from(a), 12);
  });

  it("refuses bad input with the reason", () => {
    expect(() => qwenReferenceLogits(config, weights, [])).toThrow("no tokens");
    expect(() => qwenReferenceLogits(config, weights, [1, 11])).toThrow("token 1 has id 11, outside [0, 11)");
    expect(() => qwenReferenceLogprobs(config, weights, [], [1])).toThrow("at least one token");
    const missing = new Map(weights);
    missing.delete("model.norm.weight");
    expect(() => qwenReferenceLogits(config, missing, [1])).toThrow("model.norm.weight: missing");
  });
});
