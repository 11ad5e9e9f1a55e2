import { describe, expect, it } from "vitest";
import {
  eosTokenIds,
  modelConfigToJson,
  parseModelConfig,
  parseModelConfigWithWarnings,
  qwenBiases,
  tinyQwenConfig,
} from "../src/model-config.ts";
import { qwenParameterCount, qwenWeightNames } from "../src/weights.ts";

/** The config.json of Qwen/Qwen2.5-0.5B-Instruct, as published. */
const qwen25 = {
  architectures: ["Qwen2ForCausalLM"],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: "silu",
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 21,
  model_type: "qwen2",
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: "bfloat16",
  transformers_version: "4.43.1",
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

/** The config.json of Qwen/Qwen3-0.6B, as published (head_dim 128 ≠ 1024 / 16). */
const qwen3 = {
  architectures: ["Qwen3ForCausalLM"],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: "silu",
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: "qwen3",
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: "bfloat16",
  transformers_version: "4.51.0",
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

describe("parseModelConfig", () => {
  it("parses Qwen2.5-0.5B and counts its published 494,032,768 parameters", () => {
    const { config, warnings } = parseModelConfigWithWarnings(qwen25);
    expect(warnings).toEqual([]);
    expect(config.head_dim).toBe(64);
    expect(config.attention_bias).toBe(true);
    expect(qwenBiases(config)).toEqual({ qkv: true, o: false });
    expect(config.torch_dtype).toBe("bfloat16");
    expect(qwenParameterCount(config)).toBe(494_032_768);
  });

  it("parses Qwen3-0.6B: head_dim from the file, q/k norms, 596,049,920 parameters (0.44B non-embedding)", () => {
    const config = parseModelConfig(qwen3);
    expect(config.head_dim).toBe(128);
    expect(qwenBiases(config)).toEqual({ qkv: false, o: false });
    const names = qwenWeightNames(config).map((s) => s.name);
    expect(names).toContain("model.layers.27.self_attn.q_norm.weight");
    expect(names).not.toContain("lm_head.weight");
    expect(
      qwenWeightNames(config).find((s) => s.name === "model.layers.0.self_attn.q_proj.weight")!.shape,
    ).toEqual([2048, 1024]);
    const total = qwenParameterCount(config);
    expect(total).toBe(596_049_920);
    expect(total - 151936 * 1024).toBe(440_467_456); // the model card's "0.44B non-embedding"
  });

  it("fills defaults for optional fields", () => {
    const { rope_theta: _r, rms_norm_eps: _e, num_key_value_heads: _k, ...minimal } = qwen25;
    const config = parseModelConfig(minimal);
    expect(config.rope_theta).toBe(10000);
    expect(config.rms_norm_eps).toBe(1e-6);
    expect(config.num_key_value_heads).toBe(14);
    expect(
      parseModelConfig({
        ...qwen3,
        rope_theta: undefined,
        rope_parameters: { rope_type: "default", rope_theta: 5e5 },
      }).rope_theta,
    ).toBe(5e5);
  });

  it("warns about unknown fields and ignores known harmless ones", () => {
    const { warnings } = parseModelConfigWithWarnings({ ...qwen3, zz_new_field: 1, auto_map: {} });
    expect(warnings).toEqual(['config.json: unknown field "zz_new_field" ignored']);
  });

  it.each([
    [{ ...qwen25, model_type: "llama" }, 'config.json: model_type: unsupported "llama"'],
    [
      { ...qwen25, architectures: ["Qwen3ForCausalLM"] },
      'config.json: architectures: expected ["Qwen2ForCausalLM"]',
    ],
    [{ ...qwen3, rope_scaling: { rope_type: "yarn", factor: 4 } }, "config.json: rope_scaling:"],
    [{ ...qwen3, use_sliding_window: true }, "config.json: use_sliding_window:"],
    [{ ...qwen3, hidden_act: "gelu" }, "config.json: hidden_act:"],
    [{ ...qwen3, layer_types: ["full_attention", "sliding_attention"] }, "config.json: layer_types:"],
    [{ ...qwen3, quantization_config: { quant_method: "awq" } }, "config.json: quantization_config:"],
    [{ ...qwen3, hidden_size: -4 }, "config.json: hidden_size:"],
    [{ ...qwen3, vocab_size: "big" }, "config.json: vocab_size:"],
    [
      { ...qwen3, num_key_value_heads: 3 },
      "config.json: num_key_value_heads: 3 does not divide num_attention_heads = 16",
    ],
    [{ ...qwen3, head_dim: 3 }, "config.json: head_dim: RoPE needs an even head_dim"],
    [{ ...qwen3, eos_token_id: 200000 }, "config.json: eos_token_id: 200000 is outside the vocabulary"],
    [{ ...qwen3, torch_dtype: "int8" }, 'config.json: torch_dtype: unsupported "int8"'],
    [
      { ...qwen25, head_dim: 128 },
      "config.json: head_dim: qwen2 needs hidden_size / num_attention_heads = 64",
    ],
    [[], "config.json: (root): expected a JSON object"],
  ])("refuses %#, naming the field", (json, message) => {
    expect(() => parseModelConfig(json)).toThrow(message);
  });

  it("round-trips through config.json, with the HF architecture name", () => {
    for (const raw of [qwen25, qwen3]) {
      const config = parseModelConfig(raw);
      const json = modelConfigToJson(config);
      expect(json.architectures).toEqual([raw.architectures[0]]);
      expect(parseModelConfigWithWarnings(JSON.parse(JSON.stringify(json)))).toEqual({
        config,
        warnings: [],
      });
    }
    expect("attention_bias" in modelConfigToJson(parseModelConfig(qwen25))).toBe(false);
  });

  it("accepts a list of eos ids", () => {
    const config = parseModelConfig({ ...qwen3, eos_token_id: [151645, 151643] });
    expect(eosTokenIds(config)).toEqual([151645, 151643]);
  });
});

describe("tinyQwenConfig", () => {
  it("is the documented tiny model", () => {
    const config = tinyQwenConfig();
    expect(config).toMatchObject({
      model_type: "qwen3",
      vocab_size: 512,
      hidden_size: 256,
      num_hidden_layers: 4,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 64,
      intermediate_size: 1024,
      tie_word_embeddings: true,
    });
    // embed 512·256 + 4 · (2 norms 512 + q 256·256 + k,v 2·128·256 + o 256·256 + qk norms 128 + mlp 3·256·1024) + norm 256
    const perLayer = 512 + 65536 + 2 * 32768 + 65536 + 128 + 3 * 262144;
    expect(qwenParameterCount(config)).toBe(512 * 256 + 4 * perLayer + 256);
  });

  it("applies overrides and validates them", () => {
    const qwen2 = tinyQwenConfig({ model_type: "qwen2", hidden_size: 128 });
    expect(qwen2.head_dim).toBe(32);
    expect(qwen2.attention_bias).toBe(true);
    expect(() => tinyQwenConfig({ num_key_value_heads: 3 })).toThrow("num_key_value_heads");
  });
});
