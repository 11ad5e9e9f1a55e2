import { describe, expect, it } from "vitest";
import { tinyQwenConfig } from "../src/model-config.ts";
import { cloneWeights } from "../src/tensor.ts";
import { checkWeightsAgainstConfig, initQwenWeights, qwenWeightNames } from "../src/weights.ts";

describe("qwenWeightNames", () => {
  it("lists one qwen3 layer in HF order with torch Linear shapes", () => {
    const config = tinyQwenConfig({ num_hidden_layers: 1, tie_word_embeddings: false });
    expect(qwenWeightNames(config).map((s) => `${s.name} [${s.shape.join(",")}]`)).toEqual([
      "model.embed_tokens.weight [512,256]",
      "model.layers.0.input_layernorm.weight [256]",
      "model.layers.0.self_attn.q_proj.weight [256,256]",
      "model.layers.0.self_attn.k_proj.weight [128,256]",
      "model.layers.0.self_attn.v_proj.weight [128,256]",
      "model.layers.0.self_attn.o_proj.weight [256,256]",
      "model.layers.0.self_attn.q_norm.weight [64]",
      "model.layers.0.self_attn.k_norm.weight [64]",
      "model.layers.0.post_attention_layernorm.weight [256]",
      "model.layers.0.mlp.gate_proj.weight [1024,256]",
      "model.layers.0.mlp.up_proj.weight [1024,256]",
      "model.layers.0.mlp.down_proj.weight [256,1024]",
      "model.norm.weight [256]",
      "lm_head.weight [512,256]",
    ]);
  });

  it("gives qwen2 q/k/v biases and no q/k norms; qwen3 attention_bias adds o_proj.bias too", () => {
    const qwen2 = qwenWeightNames(tinyQwenConfig({ model_type: "qwen2", num_hidden_layers: 1 })).map(
      (s) => s.name,
    );
    expect(qwen2.filter((n) => n.endsWith(".bias"))).toEqual([
      "model.layers.0.self_attn.q_proj.bias",
      "model.layers.0.self_attn.k_proj.bias",
      "model.layers.0.self_attn.v_proj.bias",
    ]);
    expect(qwen2.some((n) => n.includes("q_norm"))).toBe(false);
    const biased = qwenWeightNames(tinyQwenConfig({ num_hidden_layers: 1, attention_bias: true })).map(
      (s) => s.name,
    );
    expect(biased.filter((n) => n.endsWith(".bias")).length).toBe(4);
    expect(biased).toContain("model.layers.0.self_attn.o_proj.bias");
  });
});

describe("initQwenWeights", () => {
  const config = tinyQwenConfig({ num_hidden_layers: 2, model_type: "qwen2" });

  it("draws N(0, 0.02²) matrices, unit norms and zero biases", () => {
    const weights = initQwenWeights(config, 7);
    const embed = weights.get("model.embed_tokens.weight")!.data;
    let sum = 0;
    let sumSq = 0;
    for (const x of embed) {
      sum += x;
      sumSq += x * x;
    }
    const n = embed.length; // 131072 draws: std error of the mean 0.02/362 ≈ 5.5e-5
    expect(Math.abs(sum / n)).toBeLessThan(3e-4);
    expect(Math.sqrt(sumSq / n)).toBeCloseTo(0.02, 3);
    expect(weights.get("model.layers.1.input_layernorm.weight")!.data.every((x) => x === 1)).toBe(true);
    expect(weights.get("model.layers.0.self_attn.q_proj.bias")!.data.every((x) => x === 0)).toBe(true);
    expect(checkWeightsAgainstConfig(weights, config)).toBe(weights);
  });

  it("is deterministic in the seed, and tensors differ from each other", () => {
    const a = initQwenWeights(config, 1);
    const b = initQwenWeights(config, 1);
    const c = initQwenWeights(config, 2);
    expect(a.get("model.layers.0.mlp.up_proj.weight")!.data).toEqual(
      b.get("model.layers.0.mlp.up_proj.weight")!.data,
    );
    expect(a.get("model.layers.0.mlp.up_proj.weight")!.data[0]).not.toBe(
      c.get("model.layers.0.mlp.up_proj.weight")!.data[0],
    );
    expect(a.get("model.layers.0.mlp.up_proj.weight")!.data[0]).not.toBe(
      a.get("model.layers.0.mlp.gate_proj.weight")!.data[0],
    );
  });
});

describe("checkWeightsAgainstConfig", () => {
  const config = tinyQwenConfig({ num_hidden_layers: 1 });

  it("names transposed, missing and unexpected tensors, all at once", () => {
    const weights = cloneWeights(initQwenWeights(config, 0));
    const up = weights.get("model.layers.0.mlp.up_proj.weight")!;
    weights.set("model.layers.0.mlp.up_proj.weight", { shape: [256, 1024], data: up.data });
    weights.delete("model.norm.weight");
    weights.set("lm_head.weight", { shape: [512, 256], data: new Float32Array(512 * 256) });
    let message = "";
    try {
      checkWeightsAgainstConfig(weights, config);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("model.layers.0.mlp.up_proj.weight: expected [1024,256], got [256,1024]");
    expect(message).toContain("model.norm.weight: missing (expected [256])");
    expect(message).toContain("lm_head.weight: unexpected tensor (tie_word_embeddings is true");
  });

  it("names a tensor whose data does not fill its shape", () => {
    const weights = cloneWeights(initQwenWeights(config, 0));
    weights.set("model.norm.weight", { shape: [256], data: new Float32Array(255) });
    expect(() => checkWeightsAgainstConfig(weights, config)).toThrow(
      "model.norm.weight: shape [256] but 255 values",
    );
  });
});
