/**
 * `model.onnx` of a published policy: the decode graph of libs/engine-onnx (the graph the engine
 * samples with), serialised as ONNX opset 21, with one promise to its users: **its weight inputs
 * are exactly the tensors of `model.safetensors`, under their HF names**.
 *
 * The weights are graph inputs, not initializers (that is how the engine updates them without
 * rebuilding sessions), so the file holds the computation only. The engine's graphs may take some
 * weights fused (`…self_attn.qkv_proj.weight` = [q_proj; k_proj; v_proj] stacked along the output
 * axis, `…mlp.gate_up_proj.weight` = [gate_proj; up_proj]); the export turns each fused input back
 * into its HF parts plus a Concat node inside the graph, so a user never has to know about fusion.
 *
 * To run it elsewhere (onnxruntime-web, Python), feed:
 *   - every tensor of model.safetensors under its name (float32);
 *   - `input_ids` int64 [B, T]; `rope_cos`/`rope_sin` float32 [B, T, 1, head_dim];
 *   - `attn_bias` float32 [B, 1, 1, T, P + T] (0 = attend, −1e9 = masked);
 *   - `past_key.i`/`past_value.i` float32 [B, kv_heads, P, head_dim] per layer (P = 0 for the prompt);
 * and read `logits` [B, vocab] of the last position plus `present_key.i`/`present_value.i`, the next
 * step's past. libs/engine-onnx/src/model/host-inputs.ts computes the RoPE tables and the bias.
 */
import { type QwenConfig, qwenWeightNames } from "@troupe/engine";
import { buildDecodeGraph, OPSET } from "@troupe/engine-onnx";
import onnxProto from "onnx-proto";
import type { OnnxGraphInfo } from "./manifest.ts";

const { onnx } = onnxProto;

export const ONNX_GRAPH_FILE = "model.onnx";

/** Inputs of the decode graph that are not weights. */
const HOST_INPUT = /^(input_ids|rope_cos|rope_sin|attn_bias|past_key\.\d+|past_value\.\d+)$/;

/** The HF tensors a fused graph input stacks, by the engine's naming (`qkv_proj`, `gate_up_proj`). */
function fusedParts(name: string): string[] | undefined {
  const m = /^(.*)\.(qkv_proj|gate_up_proj)\.(weight|bias)$/.exec(name);
  if (!m) return undefined;
  const [, prefix, kind, param] = m;
  const parts = kind === "qkv_proj" ? ["q_proj", "k_proj", "v_proj"] : ["gate_proj", "up_proj"];
  return parts.map((p) => `${prefix}.${p}.${param}`);
}

/**
 * Rewrites a graph's fused weight inputs into their HF parts plus a Concat (axis 0) each. A graph
 * input that is neither a host input, an HF tensor, nor a fused group of HF tensors whose rows add
 * up is an error naming it: the export would otherwise ship a file nobody can feed.
 */
export function withSafetensorsInputs(bytes: Uint8Array, config: QwenConfig): Uint8Array {
  const model = onnx.ModelProto.decode(bytes);
  const graph = model.graph!;
  const hf = new Map(qwenWeightNames(config).map((s) => [s.name, s.shape]));
  const inputs: InstanceType<typeof onnx.ValueInfoProto>[] = [];
  const concats: InstanceType<typeof onnx.NodeProto>[] = [];
  for (const input of graph.input ?? []) {
    const name = input.name ?? "";
    if (HOST_INPUT.test(name) || hf.has(name)) {
      inputs.push(input as InstanceType<typeof onnx.ValueInfoProto>);
      continue;
    }
    const parts = fusedParts(name);
    const dims = input.type?.tensorType?.shape?.dim?.map((d) => Number(d.dimValue)) ?? [];
    const rows = parts?.map((p) => hf.get(p)?.[0]);
    if (
      parts === undefined ||
      rows!.some((r) => r === undefined) ||
      rows!.reduce((a, b) => a! + b!, 0) !== dims[0]
    ) {
      throw new Error(
        `onnx export: graph input "${name}" is neither a model.safetensors tensor nor a fused group of them`,
      );
    }
    for (const part of parts) {
      const shape = hf.get(part)!;
      inputs.push(
        onnx.ValueInfoProto.create({
          name: part,
          type: {
            tensorType: {
              elemType: input.type!.tensorType!.elemType!,
              shape: { dim: shape.map((d) => ({ dimValue: d })) },
            },
          },
        }),
      );
    }
    concats.push(
      onnx.NodeProto.create({
        opType: "Concat",
        name: `unfuse/${name}`,
        input: parts,
        output: [name],
        attribute: [
          onnx.AttributeProto.create({ name: "axis", type: onnx.AttributeProto.AttributeType.INT, i: 0 }),
        ],
      }),
    );
  }
  graph.input = inputs;
  graph.node = [...concats, ...(graph.node ?? [])];
  return onnx.ModelProto.encode(model).finish();
}

/** The decode graph of a model config as ONNX bytes (inputs named as in model.safetensors), with its manifest description. */
export function exportDecodeGraph(config: QwenConfig): { bytes: Uint8Array; info: OnnxGraphInfo } {
  return {
    bytes: withSafetensorsInputs(buildDecodeGraph(config, "float32").toBytes(), config),
    info: { file: ONNX_GRAPH_FILE, graph: "decode", opset: OPSET, weights: "model.safetensors" },
  };
}
