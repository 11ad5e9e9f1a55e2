import { initQwenWeights, qwenWeightNames, tinyQwenConfig } from "@troupe/engine";
import { MICRO_QWEN_SHAPE } from "@troupe/engine/testing";
import { describe, expect, it } from "vitest";
import { fusedData, fusedGroups, graphWeightSpecs, packWeights } from "../../src/model/fused-weights.ts";
import { toFloat64 } from "../fixtures.ts";

const config = tinyQwenConfig({
  model_type: "qwen2",
  vocab_size: 32,
  ...MICRO_QWEN_SHAPE,
  bos_token_id: 0,
  eos_token_id: 1,
  pad_token_id: 0,
});

describe("fused q/k/v and gate/up weights", () => {
  it("groups q/k/v weights and biases and gate/up per layer, stacked along the output axis", () => {
    const groups = fusedGroups(config);
    expect(groups.map((g) => g.name)).toEqual([
      "model.layers.0.self_attn.qkv_proj.weight",
      "model.layers.0.self_attn.qkv_proj.bias",
      "model.layers.0.mlp.gate_up_proj.weight",
      "model.layers.1.self_attn.qkv_proj.weight",
      "model.layers.1.self_attn.qkv_proj.bias",
      "model.layers.1.mlp.gate_up_proj.weight",
    ]);
    // q: 4 heads × 4 = 16 rows, k and v: 2 × 4 = 8 rows each; gate and up: 24 rows each.
    expect(groups[0]!.shape).toEqual([32, 16]);
    expect(groups[1]!.shape).toEqual([32]);
    expect(groups[2]!.shape).toEqual([48, 16]);
    // The decode graph replaces 8 HF tensors per layer (q/k/v weights and biases, gate, up) by 3.
    expect(graphWeightSpecs(config, true).length).toBe(qwenWeightNames(config).length - 2 * 8 + 2 * 3);
    expect(graphWeightSpecs(config, false).map((s) => s.name)).toEqual(
      qwenWeightNames(config).map((s) => s.name),
    );
  });

  it("packing keeps names, shapes and values, and makes the fused input a view without copy", () => {
    const weights = initQwenWeights(config, 5);
    const before = new Map([...weights].map(([n, t]) => [n, { shape: t.shape, data: t.data.slice() }]));
    const group = fusedGroups(config)[0]!;
    const copied = fusedData(group, weights); // not packed yet: a fresh concatenation
    expect(copied.buffer).not.toBe(weights.get(group.parts[0]!)!.data.buffer);
    packWeights(config, weights);
    for (const [name, t] of before) {
      expect(weights.get(name)!.shape).toEqual(t.shape);
      expect(weights.get(name)!.data).toEqual(t.data);
    }
    const view = fusedData(group, weights);
    expect(view.buffer).toBe(weights.get("model.layers.0.self_attn.k_proj.weight")!.data.buffer);
    expect(view).toEqual(copied);
    // [W_q; W_k; W_v]: k's first row starts after q's 16 rows of 16.
    expect(view[16 * 16]).toBe(before.get("model.layers.0.self_attn.k_proj.weight")!.data[0]);
    // Writing through an HF name is seen by the fused view (the optimizer updates HF tensors).
    weights.get("model.layers.0.self_attn.v_proj.weight")!.data[3] = 42;
    expect(view[(16 + 8) * 16 + 3]).toBe(42);
    // Packing again leaves the buffers alone.
    const buffer = view.buffer;
    packWeights(config, weights);
    expect(fusedData(group, weights).buffer).toBe(buffer);
  });

  it("concatenates float64 parts and names a missing part", () => {
    const weights = new Map(toFloat64(initQwenWeights(config, 1)));
    const group = fusedGroups(config)[2]!;
    const data = fusedData(group, weights);
    expect(data).toBeInstanceOf(Float64Array);
    expect(data.length).toBe(48 * 16);
    weights.delete("model.layers.0.mlp.up_proj.weight");
    expect(() => fusedData(group, weights)).toThrow(
      "weights: missing model.layers.0.mlp.up_proj.weight (part of model.layers.0.mlp.gate_up_proj.weight)",
    );
  });
});
