import { describe, expect, it } from "vitest";
import { graphWeightSpecs, packWeights } from "../../src/model/fused-weights.ts";
import { weightFeeds } from "../../src/runtime/weight-feeds.ts";
import { TINY_CONFIGS, tinyWeights, toFloat64 } from "../fixtures.ts";

const config = TINY_CONFIGS["qwen2 untied, q/k/v biases"]!;

describe("weightFeeds", () => {
  it("wraps each host array without a copy; a packed fused group is a view over its parts", () => {
    const weights = packWeights(config, tinyWeights(config, 1));
    const plain = weightFeeds(weights, graphWeightSpecs(config, false), "float32", "p");
    const embed = weights.get("model.embed_tokens.weight")!;
    expect(plain["model.embed_tokens.weight"]!.data).toBe(embed.data);
    expect(plain["model.embed_tokens.weight"]!.dims).toEqual(embed.shape);
    const fused = weightFeeds(weights, graphWeightSpecs(config, true), "float32", "p");
    const qkv = fused["model.layers.0.self_attn.qkv_proj.weight"]!.data as Float32Array;
    const q = weights.get("model.layers.0.self_attn.q_proj.weight")!.data;
    expect(qkv.buffer).toBe(q.buffer);
    expect(qkv.length).toBe(
      fused["model.layers.0.self_attn.qkv_proj.weight"]!.dims.reduce((a, b) => a * b, 1),
    );
  });

  it("names a missing weight and a weight of another dtype", () => {
    const weights = tinyWeights(config, 1);
    weights.delete("model.norm.weight");
    expect(() => weightFeeds(weights, graphWeightSpecs(config, false), "float32", "policy p")).toThrow(
      "policy p: missing weight model.norm.weight",
    );
    expect(() =>
      weightFeeds(toFloat64(tinyWeights(config, 1)), graphWeightSpecs(config, false), "float32", "policy p"),
    ).toThrow("policy p: weight model.embed_tokens.weight is not float32");
  });
});
