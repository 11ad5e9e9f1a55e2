/**
 * Fused projections: the graphs multiply by [W_q; W_k; W_v] and [W_gate; W_up] in one Gemm each
 * instead of three and two. Fewer, wider matrix products run closer to the CPU's peak (the k/v
 * projections are only KV·d_head = 128 columns wide), the backward pass gets one ∂x Gemm instead of
 * three plus two Adds, and a decode step runs 17 instead of 29 Gemms for 4 layers.
 *
 * Storage keeps the HF names and layout (what checkpoints, the optimizer and the tests see): the
 * HF tensors are stacked along their output axis, which in the row-major [out, in] layout is plain
 * concatenation, so `packWeights` puts the parts of each group into one buffer and replaces every
 * part by a view into it. A graph input is then a zero-copy view spanning the parts; for weights
 * that were not packed (tests, float64 copies) `fusedData` concatenates into a fresh array.
 */
import { type QwenConfig, qwenBiases, qwenWeightNames, type Weights } from "@troupe/engine";

type FloatArray = Float32Array | Float64Array;

export interface FusedGroup {
  /** Graph input name, e.g. `model.layers.0.self_attn.qkv_proj.weight`. */
  readonly name: string;
  /** HF tensors stacked along axis 0, in order. */
  readonly parts: readonly string[];
  /** Rows (axis 0 size) of each part. */
  readonly rows: readonly number[];
  readonly shape: readonly number[];
}

export interface GraphWeightSpec {
  readonly name: string;
  readonly shape: readonly number[];
  /** Set when the input is a fused group of HF tensors. */
  readonly group?: FusedGroup;
}

/** The fused groups of a config: q/k/v weights (and biases when present), gate/up weights, per layer. */
export function fusedGroups(config: QwenConfig): FusedGroup[] {
  const d = config.hidden_size;
  const qOut = config.num_attention_heads * config.head_dim;
  const kvOut = config.num_key_value_heads * config.head_dim;
  const I = config.intermediate_size;
  const groups: FusedGroup[] = [];
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const a = `model.layers.${i}.self_attn`;
    const rows = [qOut, kvOut, kvOut];
    const total = qOut + 2 * kvOut;
    groups.push({
      name: `${a}.qkv_proj.weight`,
      parts: [`${a}.q_proj.weight`, `${a}.k_proj.weight`, `${a}.v_proj.weight`],
      rows,
      shape: [total, d],
    });
    if (qwenBiases(config).qkv) {
      groups.push({
        name: `${a}.qkv_proj.bias`,
        parts: [`${a}.q_proj.bias`, `${a}.k_proj.bias`, `${a}.v_proj.bias`],
        rows,
        shape: [total],
      });
    }
    const m = `model.layers.${i}.mlp`;
    groups.push({
      name: `${m}.gate_up_proj.weight`,
      parts: [`${m}.gate_proj.weight`, `${m}.up_proj.weight`],
      rows: [I, I],
      shape: [2 * I, d],
    });
  }
  return groups;
}

/**
 * A graph's weight inputs: the HF tensors, and with `fused` each fused group in place of its first
 * part (decode graphs; see weights.ts for why scoring and training graphs stay unfused).
 */
export function graphWeightSpecs(config: QwenConfig, fused: boolean): GraphWeightSpec[] {
  if (!fused) return qwenWeightNames(config).map((s) => ({ name: s.name, shape: s.shape }));
  const byFirstPart = new Map<string, FusedGroup>();
  const fusedPart = new Set<string>();
  for (const g of fusedGroups(config)) {
    byFirstPart.set(g.parts[0]!, g);
    for (const p of g.parts) fusedPart.add(p);
  }
  const specs: GraphWeightSpec[] = [];
  for (const spec of qwenWeightNames(config)) {
    const group = byFirstPart.get(spec.name);
    if (group !== undefined) specs.push({ name: group.name, shape: group.shape, group });
    else if (!fusedPart.has(spec.name)) specs.push({ name: spec.name, shape: spec.shape });
  }
  return specs;
}

/** The parts' data, in order; throws naming a missing part. */
function partData(group: FusedGroup, weights: ReadonlyMap<string, { readonly data: FloatArray }>) {
  return group.parts.map((name) => {
    const t = weights.get(name);
    if (t === undefined) throw new Error(`weights: missing ${name} (part of ${group.name})`);
    return t.data;
  });
}

/** Whether the arrays lie back to back, in order, in one buffer. */
function contiguous(parts: readonly FloatArray[]): boolean {
  const first = parts[0]!;
  let offset = first.byteOffset;
  for (const p of parts) {
    if (p.buffer !== first.buffer || p.byteOffset !== offset || p.constructor !== first.constructor)
      return false;
    offset += p.byteLength;
  }
  return true;
}

/** The parts as one array: a view when they already lie back to back in one buffer, else a copy. */
export function fusedData(
  group: FusedGroup,
  weights: ReadonlyMap<string, { readonly data: FloatArray }>,
): FloatArray {
  const parts = partData(group, weights);
  const first = parts[0]!;
  const Ctor = first.constructor as Float32ArrayConstructor | Float64ArrayConstructor;
  const total = parts.reduce((n, p) => n + p.length, 0);
  if (contiguous(parts)) return new Ctor(first.buffer as ArrayBuffer, first.byteOffset, total);
  const out = new Ctor(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Moves every fused group's parts into one buffer (in place: the map's entries are replaced by
 * views with the same shapes and values). Groups already contiguous are left alone, so packing
 * twice is free. One group at a time, so at most one group's worth of memory is briefly held twice.
 */
export function packWeights(config: QwenConfig, weights: Weights): Weights {
  for (const group of fusedGroups(config)) {
    const parts = partData(group, weights);
    if (contiguous(parts)) continue;
    const fused = fusedData(group, weights) as Float32Array;
    let at = 0;
    for (const name of group.parts) {
      const t = weights.get(name)!;
      weights.set(name, { shape: t.shape, data: fused.subarray(at, at + t.data.length) });
      at += t.data.length;
    }
  }
  return weights;
}
