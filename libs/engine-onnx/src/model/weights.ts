/**
 * The weights as the decoder's blocks read them, prepared once per graph: graph inputs (or baked
 * constants) under their HF names, then resolved per layer into projections. Whether a graph
 * multiplies by the fused [W_q; W_k; W_v] and [W_gate; W_up] (decode graphs) or by the HF tensors
 * one at a time (scoring and training: over long rows, splitting and re-joining the wide
 * activations costs more than the fused Gemm saves) is decided here, by the graph's weight specs
 * (fused-weights.ts), never inside the layer loop.
 */
import { hasQkNorm, type QwenConfig, qwenBiases } from "@troupe/engine";
import type { FloatDType, Graph, Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { fusedData, type GraphWeightSpec } from "./fused-weights.ts";

/** Weight arrays under the graph's input names (HF names; fused groups resolved by `fusedData`). */
export type WeightData = ReadonlyMap<
  string,
  { readonly shape: readonly number[]; readonly data: Float32Array | Float64Array }
>;

/** y = x Wᵀ (+ b) over rows x [N, in], W in HF's [out, in] layout (one Gemm, transB = 1). */
export interface Linear {
  readonly weight: Value;
  readonly bias: Value | undefined;
}

export function project(x: Value, p: Linear): Value {
  return op.linear(x, p.weight, p.bias);
}

/**
 * Picks the rows whose queries are wanted (the query window, query-window.ts) out of rows
 * [N, width]; a projection applies it where it costs least.
 */
export type RowPicker = (x: Value, width: number) => Value;

export interface LayerWeights {
  readonly inputNorm: Value;
  /**
   * q [N, H·D], k, v [N, KV·D] of the normed rows h [N, d]; with `queryRows`, q of the picked rows
   * only (k and v keep every row).
   */
  readonly qkv: (h: Value, queryRows?: RowPicker) => [Value, Value, Value];
  /** qwen3's RMSNorm of q and k over d_head (undefined for qwen2). */
  readonly qNorm: Value | undefined;
  readonly kNorm: Value | undefined;
  readonly o: Linear;
  readonly postNorm: Value;
  /** SwiGLU's gate and up projections [N, I] of the normed rows. */
  readonly gateUp: (h: Value) => [Value, Value];
  readonly down: Value;
}

export interface ModelWeights {
  readonly embed: Value;
  readonly layers: readonly LayerWeights[];
  readonly norm: Value;
  /** The output head [V, d]: the embedding when tied. */
  readonly head: Value;
}

/** Declares the weights as graph inputs (HF names and shapes, fused groups as one input each). */
export function weightInputs(
  graph: Graph,
  specs: readonly GraphWeightSpec[],
  dtype: FloatDType,
): Map<string, Value> {
  const weights = new Map<string, Value>();
  for (const spec of specs) weights.set(spec.name, graph.input(spec.name, dtype, spec.shape));
  return weights;
}

/**
 * Weights baked into a graph as initializers. ORT pre-packs constant Gemm weights once at session
 * creation (MLAS re-packs a weight *input* on every call, ≈ 2× the cost of a decode-sized Gemm), so
 * a session built this way must be rebuilt whenever the weights change.
 */
export function weightConstants(
  graph: Graph,
  specs: readonly GraphWeightSpec[],
  data: WeightData,
  dtype: FloatDType,
): Map<string, Value> {
  const weights = new Map<string, Value>();
  for (const spec of specs) {
    const array = spec.group !== undefined ? fusedData(spec.group, data) : data.get(spec.name)?.data;
    if (array === undefined) throw new Error(`graph ${graph.name}: missing weight ${spec.name}`);
    if (array instanceof Float32Array !== (dtype === "float32"))
      throw new Error(`graph ${graph.name}: weight ${spec.name} is not ${dtype}`);
    weights.set(spec.name, graph.constant(array, dtype, spec.shape));
  }
  return weights;
}

/** The graph's weight values resolved for the blocks; `fused` as the specs they were declared from. */
export function modelWeights(
  config: QwenConfig,
  values: ReadonlyMap<string, Value>,
  fused: boolean,
): ModelWeights {
  const get = (name: string): Value => {
    const w = values.get(name);
    if (w === undefined) throw new Error(`decoder: missing weight ${name}`);
    return w;
  };
  const layers = Array.from({ length: config.num_hidden_layers }, (_, i) => {
    const w = (name: string) => get(`model.layers.${i}.${name}`);
    return layerWeights(config, w, fused);
  });
  const embed = get("model.embed_tokens.weight");
  return {
    embed,
    layers,
    norm: get("model.norm.weight"),
    head: config.tie_word_embeddings ? embed : get("lm_head.weight"),
  };
}

function layerWeights(config: QwenConfig, w: (name: string) => Value, fused: boolean): LayerWeights {
  const bias = qwenBiases(config);
  const qkNorm = hasQkNorm(config);
  const linear = (name: string, withBias: boolean): Linear => ({
    weight: w(`${name}.weight`),
    bias: withBias ? w(`${name}.bias`) : undefined,
  });
  return {
    inputNorm: w("input_layernorm.weight"),
    qkv: fused ? fusedQkv(config, linear("self_attn.qkv_proj", bias.qkv)) : separateQkv(linear, bias.qkv),
    qNorm: qkNorm ? w("self_attn.q_norm.weight") : undefined,
    kNorm: qkNorm ? w("self_attn.k_norm.weight") : undefined,
    o: linear("self_attn.o_proj", bias.o),
    postNorm: w("post_attention_layernorm.weight"),
    gateUp: fused
      ? fusedGateUp(config, w("mlp.gate_up_proj.weight"))
      : (h) => [op.linear(h, w("mlp.gate_proj.weight")), op.linear(h, w("mlp.up_proj.weight"))],
    down: w("mlp.down_proj.weight"),
  };
}

/** Three Gemms; the window's queries are projected from its own rows of h. */
function separateQkv(linear: (name: string, withBias: boolean) => Linear, withBias: boolean) {
  const [q, k, v] = ["q_proj", "k_proj", "v_proj"].map((p) => linear(`self_attn.${p}`, withBias));
  return (h: Value, queryRows?: RowPicker): [Value, Value, Value] => [
    project(queryRows === undefined ? h : queryRows(h, h.shape[1] as number), q!),
    project(h, k!),
    project(h, v!),
  ];
}

/** One Gemm by [W_q; W_k; W_v], split by columns; the window then keeps its own query rows. */
function fusedQkv(config: QwenConfig, qkv: Linear) {
  const H = config.num_attention_heads;
  const KV = config.num_key_value_heads;
  const D = config.head_dim;
  return (h: Value, queryRows?: RowPicker): [Value, Value, Value] => {
    const [q, k, v] = op.split(project(h, qkv), [H * D, KV * D, KV * D], 1);
    return [queryRows === undefined ? q! : queryRows(q!, H * D), k!, v!];
  };
}

/** One Gemm by [W_gate; W_up], split by columns. */
function fusedGateUp(config: QwenConfig, gateUp: Value) {
  const I = config.intermediate_size;
  return (h: Value): [Value, Value] => op.split(op.linear(h, gateUp), [I, I], 1) as [Value, Value];
}
