/**
 * The tensors of a Qwen2/Qwen3 decoder, with the exact names and shapes HF `transformers` uses, so a
 * `model.safetensors` written here loads into `Qwen3ForCausalLM.from_pretrained` and back.
 * Linear weights are `[out_features, in_features]` as in `torch.nn.Linear` (y = x Wᵀ + b).
 */
import { Rng } from "@troupe/core";
import { hasQkNorm, type QwenConfig, qwenBiases } from "./model-config.ts";
import { numel, shapeText, type Weights } from "./tensor.ts";

export type WeightKind = "embedding" | "linear" | "bias" | "norm";

export interface WeightSpec {
  readonly name: string;
  readonly shape: readonly number[];
  /** What the tensor is: decides its initialisation (and, by shape, its weight decay). */
  readonly kind: WeightKind;
}

/** Every tensor of the model, in HF order (embedding, layer by layer, final norm, lm_head). */
export function qwenWeightNames(config: QwenConfig): WeightSpec[] {
  const H = config.hidden_size;
  const V = config.vocab_size;
  const I = config.intermediate_size;
  const D = config.head_dim;
  const qOut = config.num_attention_heads * D;
  const kvOut = config.num_key_value_heads * D;
  const bias = qwenBiases(config);
  const specs: WeightSpec[] = [{ name: "model.embed_tokens.weight", shape: [V, H], kind: "embedding" }];
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    specs.push({ name: `${p}.input_layernorm.weight`, shape: [H], kind: "norm" });
    specs.push({ name: `${p}.self_attn.q_proj.weight`, shape: [qOut, H], kind: "linear" });
    if (bias.qkv) specs.push({ name: `${p}.self_attn.q_proj.bias`, shape: [qOut], kind: "bias" });
    specs.push({ name: `${p}.self_attn.k_proj.weight`, shape: [kvOut, H], kind: "linear" });
    if (bias.qkv) specs.push({ name: `${p}.self_attn.k_proj.bias`, shape: [kvOut], kind: "bias" });
    specs.push({ name: `${p}.self_attn.v_proj.weight`, shape: [kvOut, H], kind: "linear" });
    if (bias.qkv) specs.push({ name: `${p}.self_attn.v_proj.bias`, shape: [kvOut], kind: "bias" });
    specs.push({ name: `${p}.self_attn.o_proj.weight`, shape: [H, qOut], kind: "linear" });
    if (bias.o) specs.push({ name: `${p}.self_attn.o_proj.bias`, shape: [H], kind: "bias" });
    if (hasQkNorm(config)) {
      specs.push({ name: `${p}.self_attn.q_norm.weight`, shape: [D], kind: "norm" });
      specs.push({ name: `${p}.self_attn.k_norm.weight`, shape: [D], kind: "norm" });
    }
    specs.push({ name: `${p}.post_attention_layernorm.weight`, shape: [H], kind: "norm" });
    specs.push({ name: `${p}.mlp.gate_proj.weight`, shape: [I, H], kind: "linear" });
    specs.push({ name: `${p}.mlp.up_proj.weight`, shape: [I, H], kind: "linear" });
    specs.push({ name: `${p}.mlp.down_proj.weight`, shape: [H, I], kind: "linear" });
  }
  specs.push({ name: "model.norm.weight", shape: [H], kind: "norm" });
  if (!config.tie_word_embeddings) specs.push({ name: "lm_head.weight", shape: [V, H], kind: "linear" });
  return specs;
}

/** Number of parameters (tied embeddings counted once). */
export function qwenParameterCount(config: QwenConfig): number {
  return qwenWeightNames(config).reduce((n, spec) => n + numel(spec.shape), 0);
}

/**
 * Fresh weights as HF's `_init_weights` makes them: matrices (embedding, linear) ~ N(0, σ²) with
 * σ = `initializer_range` (0.02), norms = 1, biases = 0. Deterministic in `seed`: each tensor draws
 * from its own Rng seeded by (seed, name), so adding a tensor never changes the others.
 */
export function initQwenWeights(config: QwenConfig, seed: number): Weights {
  const weights: Weights = new Map();
  for (const spec of qwenWeightNames(config)) {
    const data = new Float32Array(numel(spec.shape));
    if (spec.kind === "norm") data.fill(1);
    else if (spec.kind !== "bias")
      fillNormal(data, config.initializer_range, new Rng(seedFor(seed, spec.name)));
    weights.set(spec.name, { shape: [...spec.shape], data });
  }
  return weights;
}

function seedFor(seed: number, name: string): number {
  // FNV-1a of the name mixed with the seed; Rng takes any 32-bit integer.
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** Box–Muller: two uniforms → two independent N(0, 1) draws, scaled by std. */
export function fillNormal(out: Float32Array, std: number, rng: Rng): void {
  for (let i = 0; i < out.length; i += 2) {
    const u1 = 1 - rng.float(); // (0, 1]: log never sees 0
    const u2 = rng.float();
    const r = Math.sqrt(-2 * Math.log(u1));
    out[i] = std * r * Math.cos(2 * Math.PI * u2);
    if (i + 1 < out.length) out[i + 1] = std * r * Math.sin(2 * Math.PI * u2);
  }
}

/**
 * Names every problem of a weight set against the config: missing tensors, unexpected tensors and
 * shape mismatches, e.g. `model.layers.0.mlp.up_proj.weight: expected [1024,256], got [256,1024]`.
 * Returns the weights when they fit; throws one error listing all problems otherwise.
 */
export function checkWeightsAgainstConfig(weights: Weights, config: QwenConfig): Weights {
  const problems: string[] = [];
  const specs = qwenWeightNames(config);
  const expected = new Set(specs.map((s) => s.name));
  for (const spec of specs) {
    const t = weights.get(spec.name);
    if (t === undefined) {
      problems.push(`${spec.name}: missing (expected ${shapeText(spec.shape)})`);
      continue;
    }
    if (t.shape.length !== spec.shape.length || t.shape.some((d, i) => d !== spec.shape[i])) {
      problems.push(`${spec.name}: expected ${shapeText(spec.shape)}, got ${shapeText(t.shape)}`);
    } else if (t.data.length !== numel(spec.shape)) {
      problems.push(`${spec.name}: shape ${shapeText(spec.shape)} but ${t.data.length} values`);
    }
  }
  for (const name of weights.keys()) {
    if (expected.has(name)) continue;
    const hint =
      name === "lm_head.weight" && config.tie_word_embeddings
        ? " (tie_word_embeddings is true: lm_head shares model.embed_tokens.weight)"
        : "";
    problems.push(`${name}: unexpected tensor${hint}`);
  }
  if (problems.length > 0) {
    throw new Error(`weights do not match the ${config.model_type} config:\n  ${problems.join("\n  ")}`);
  }
  return weights;
}
