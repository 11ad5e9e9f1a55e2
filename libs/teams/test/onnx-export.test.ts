/** `model.onnx`: the decode graph whose weight inputs are exactly model.safetensors' tensors. */
import { qwenWeightNames } from "@troupe/engine";
import { buildDecodeGraph, OPSET } from "@troupe/engine-onnx";
import onnxProto from "onnx-proto";
import { describe, expect, it } from "vitest";
import { exportDecodeGraph, ONNX_GRAPH_FILE, withSafetensorsInputs } from "../src/onnx-export.ts";
import { tinyConfig } from "./fixtures.ts";

const { onnx } = onnxProto;
const HOST = /^(input_ids|rope_cos|rope_sin|attn_bias|past_key\.\d+|past_value\.\d+)$/;

describe("ONNX export", () => {
  it("the graph's weight inputs are model.safetensors' tensors, by name and shape; fused ones become Concats", () => {
    const { bytes, info } = exportDecodeGraph(tinyConfig);
    expect(info).toEqual({
      file: ONNX_GRAPH_FILE,
      graph: "decode",
      opset: OPSET,
      weights: "model.safetensors",
    });
    expect(ONNX_GRAPH_FILE).toBe("model.onnx");
    const graph = onnx.ModelProto.decode(bytes).graph!;
    const inputs = graph.input!.map((i) => i.name!);
    const weights = inputs.filter((name) => !HOST.test(name)).sort();
    const hf = qwenWeightNames(tinyConfig);
    expect(weights).toEqual(hf.map((s) => s.name).sort());
    for (const input of graph.input!) {
      const spec = hf.find((s) => s.name === input.name);
      if (spec)
        expect(input.type!.tensorType!.shape!.dim!.map((d) => Number(d.dimValue))).toEqual(spec.shape);
    }
    expect(inputs.filter((name) => HOST.test(name)).sort()).toEqual(
      ["attn_bias", "input_ids", "past_key.0", "past_value.0", "rope_cos", "rope_sin"].sort(),
    );
    // Every fused input of the engine's graph is rebuilt by a Concat on axis 0 of its HF parts.
    const fused = onnx.ModelProto.decode(buildDecodeGraph(tinyConfig, "float32").toBytes())
      .graph!.input!.map((i) => i.name!)
      .filter((name) => /\.(qkv_proj|gate_up_proj)\./.test(name));
    const concats = graph.node!.filter((n) => n.name?.startsWith("unfuse/"));
    expect(concats.length).toBeGreaterThan(0);
    expect(concats.map((n) => n.output![0]).sort()).toEqual([...fused].sort());
    for (const node of concats) {
      expect(node.opType).toBe("Concat");
      expect(node.attribute!.map((a) => [a.name, Number(a.i)])).toEqual([["axis", 0]]);
      const name = node.output![0]!;
      const parts = name.includes("qkv_proj")
        ? ["q_proj", "k_proj", "v_proj"].map((p) => name.replace("qkv_proj", p))
        : ["gate_proj", "up_proj"].map((p) => name.replace("gate_up_proj", p));
      expect(node.input).toEqual(parts);
    }
  });

  it("an input that is neither a tensor of model.safetensors nor a fused group of them is refused, named", () => {
    const model = onnx.ModelProto.decode(buildDecodeGraph(tinyConfig, "float32").toBytes());
    const graph = model.graph!;
    const bad = (name: string, rows: number) =>
      onnx.ValueInfoProto.create({
        name,
        type: { tensorType: { elemType: 1, shape: { dim: [{ dimValue: rows }, { dimValue: 32 }] } } },
      });
    graph.input = [...graph.input!, bad("extra.weight", 4)];
    expect(() => withSafetensorsInputs(onnx.ModelProto.encode(model).finish(), tinyConfig)).toThrow(
      'onnx export: graph input "extra.weight" is neither a model.safetensors tensor nor a fused group of them',
    );
    // A fused name whose parts' rows do not add up to its own is refused as well.
    graph.input = [...graph.input!.slice(0, -1), bad("model.layers.0.self_attn.qkv_proj.weight", 3)];
    expect(() => withSafetensorsInputs(onnx.ModelProto.encode(model).finish(), tinyConfig)).toThrow(
      '"model.layers.0.self_attn.qkv_proj.weight" is neither',
    );
  });
});
