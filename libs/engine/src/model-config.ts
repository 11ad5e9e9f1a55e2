/**
 * Model configuration of the Qwen2 / Qwen3 decoder family, as Hugging Face writes it in
 * `config.json`. The parsed config keeps HF's snake_case names so that it round-trips to a
 * `config.json` that `transformers` loads unchanged (the GPU worker reads the same file).
 *
 * Differences between the two architectures that matter to an engine:
 *
 * | feature                | qwen2 (Qwen2ForCausalLM) | qwen3 (Qwen3ForCausalLM)          |
 * |------------------------|--------------------------|-----------------------------------|
 * | q/k/v_proj bias        | always                   | iff `attention_bias`              |
 * | o_proj bias            | never                    | iff `attention_bias`              |
 * | q_norm / k_norm        | no                       | RMSNorm over head_dim, before RoPE|
 * | head_dim               | hidden / heads           | its own field (may differ)        |
 *
 * Parsing policy for fields: every field the decoder needs is validated (a bad value → an error
 * naming the field). Fields that select a feature we do not implement (rope_scaling, a sliding
 * window, an activation other than SiLU, quantization, …) are errors. Fields HF writes that do not
 * change the forward pass (`transformers_version`, `use_cache`, …) are accepted silently. Any other
 * field is accepted but reported in `warnings` by `parseModelConfigWithWarnings`, so a new HF field
 * neither breaks loading nor passes unnoticed.
 */
import { z } from "zod";

export const QwenModelTypeSchema = z.enum(["qwen2", "qwen3"]);
export type QwenModelType = z.infer<typeof QwenModelTypeSchema>;

const ARCHITECTURE_OF: Record<QwenModelType, string> = {
  qwen2: "Qwen2ForCausalLM",
  qwen3: "Qwen3ForCausalLM",
};

const positiveInt = z.number().int().positive();
const tokenId = z.number().int().min(0);

/** The parsed, complete config: every optional HF field has its default filled in. */
export const QwenConfigSchema = z.object({
  model_type: QwenModelTypeSchema,
  vocab_size: positiveInt,
  hidden_size: positiveInt,
  intermediate_size: positiveInt,
  num_hidden_layers: positiveInt,
  num_attention_heads: positiveInt,
  num_key_value_heads: positiveInt,
  /** Width of one attention head; qwen2 always uses hidden_size / num_attention_heads. */
  head_dim: positiveInt,
  rms_norm_eps: z.number().positive(),
  rope_theta: z.number().positive(),
  max_position_embeddings: positiveInt,
  tie_word_embeddings: z.boolean(),
  /** Qwen3: bias on q/k/v/o projections. Qwen2: always true (q/k/v biases; o_proj never has one). */
  attention_bias: z.boolean(),
  /** Std of the normal init of weight matrices (HF `initializer_range`). */
  initializer_range: z.number().positive(),
  bos_token_id: tokenId.nullable(),
  /** One id or several (HF allows a list: any of them ends generation). */
  eos_token_id: z.union([tokenId, z.array(tokenId).min(1)]).nullable(),
  pad_token_id: tokenId.nullable(),
  torch_dtype: z.enum(["float32", "float16", "bfloat16"]),
});
export type QwenConfig = z.infer<typeof QwenConfigSchema>;

/** HF fields that are accepted and ignored: they do not change the forward pass. */
const HARMLESS_FIELDS = new Set([
  "_name_or_path",
  "architectures",
  "transformers_version",
  "use_cache",
  "output_attentions",
  "output_hidden_states",
  "return_dict",
  "max_window_layers", // only meaningful with use_sliding_window
  "sliding_window", // idem; use_sliding_window is checked
  "auto_map",
  "is_encoder_decoder",
  "pruned_heads",
  "id2label",
  "label2id",
  "bad_words_ids",
  "problem_type",
  "chunk_size_feed_forward",
  "keys_to_ignore_at_inference",
]);

/** Fields whose value must be the one we implement, or the config is refused. */
const FEATURE_FIELDS = new Set([
  "hidden_act",
  "rope_scaling",
  "rope_parameters",
  "use_sliding_window",
  "layer_types",
  "attention_dropout",
  "use_mrope",
  "quantization_config",
  "dtype",
]);

const DTYPE_ALIASES: Record<string, QwenConfig["torch_dtype"]> = {
  float32: "float32",
  float16: "float16",
  bfloat16: "bfloat16",
  fp32: "float32",
  fp16: "float16",
  bf16: "bfloat16",
};

export class ModelConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`config.json: ${field}: ${message}`);
    this.name = "ModelConfigError";
  }
}

export interface ParsedModelConfig {
  readonly config: QwenConfig;
  /** Unknown fields that were accepted but not understood. */
  readonly warnings: readonly string[];
}

/** Parses an HF `config.json` object of a Qwen2/Qwen3 decoder; throws `ModelConfigError` naming the field. */
export function parseModelConfig(json: unknown): QwenConfig {
  return parseModelConfigWithWarnings(json).config;
}

export function parseModelConfigWithWarnings(json: unknown): ParsedModelConfig {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new ModelConfigError("(root)", "expected a JSON object");
  }
  const raw = json as Record<string, unknown>;

  const modelType = raw.model_type;
  if (modelType !== "qwen2" && modelType !== "qwen3") {
    throw new ModelConfigError(
      "model_type",
      `unsupported ${JSON.stringify(modelType)} (supported: "qwen2", "qwen3")`,
    );
  }
  if (raw.architectures !== undefined) {
    const archs = raw.architectures;
    if (!Array.isArray(archs) || archs.length !== 1 || archs[0] !== ARCHITECTURE_OF[modelType]) {
      throw new ModelConfigError(
        "architectures",
        `expected ["${ARCHITECTURE_OF[modelType]}"] for model_type "${modelType}", got ${JSON.stringify(archs)}`,
      );
    }
  }
  checkFeatures(raw);

  const numHeads = raw.num_attention_heads;
  const hidden = raw.hidden_size;
  const defaultHeadDim =
    typeof hidden === "number" && typeof numHeads === "number" && numHeads > 0
      ? hidden / numHeads
      : undefined;
  if (modelType === "qwen2" && raw.head_dim !== undefined && raw.head_dim !== defaultHeadDim) {
    throw new ModelConfigError(
      "head_dim",
      `qwen2 needs hidden_size / num_attention_heads = ${defaultHeadDim}`,
    );
  }
  const dtypeRaw = raw.torch_dtype ?? raw.dtype ?? "float32";
  const torchDtype = typeof dtypeRaw === "string" ? DTYPE_ALIASES[dtypeRaw] : undefined;
  if (torchDtype === undefined) {
    throw new ModelConfigError("torch_dtype", `unsupported ${JSON.stringify(dtypeRaw)}`);
  }
  const ropeParameters = raw.rope_parameters as { rope_theta?: unknown } | undefined;

  const candidate = {
    model_type: modelType,
    vocab_size: raw.vocab_size,
    hidden_size: hidden,
    intermediate_size: raw.intermediate_size,
    num_hidden_layers: raw.num_hidden_layers,
    num_attention_heads: numHeads,
    num_key_value_heads: raw.num_key_value_heads ?? numHeads,
    head_dim: raw.head_dim ?? defaultHeadDim,
    rms_norm_eps: raw.rms_norm_eps ?? 1e-6,
    rope_theta: raw.rope_theta ?? ropeParameters?.rope_theta ?? 10000,
    max_position_embeddings: raw.max_position_embeddings ?? 32768,
    tie_word_embeddings: raw.tie_word_embeddings ?? false,
    attention_bias: modelType === "qwen2" ? true : (raw.attention_bias ?? false),
    initializer_range: raw.initializer_range ?? 0.02,
    bos_token_id: raw.bos_token_id ?? null,
    eos_token_id: raw.eos_token_id ?? null,
    pad_token_id: raw.pad_token_id ?? null,
    torch_dtype: torchDtype,
  };
  const config = validateQwenConfig(candidate);

  const known = new Set([...Object.keys(QwenConfigSchema.shape), ...HARMLESS_FIELDS, ...FEATURE_FIELDS]);
  const warnings = Object.keys(raw)
    .filter((key) => !known.has(key))
    .sort()
    .map((key) => `config.json: unknown field "${key}" ignored`);
  return { config, warnings };
}

/** Checks a config object (already in parsed form) and its cross-field constraints. */
export function validateQwenConfig(value: unknown): QwenConfig {
  const parsed = QwenConfigSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ModelConfigError(issue.path.join(".") || "(root)", issue.message);
  }
  const c = parsed.data;
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    throw new ModelConfigError(
      "num_key_value_heads",
      `${c.num_key_value_heads} does not divide num_attention_heads = ${c.num_attention_heads}`,
    );
  }
  if (c.head_dim % 2 !== 0)
    throw new ModelConfigError("head_dim", `RoPE needs an even head_dim, got ${c.head_dim}`);
  if (c.model_type === "qwen2" && c.head_dim * c.num_attention_heads !== c.hidden_size) {
    throw new ModelConfigError(
      "hidden_size",
      `qwen2 needs hidden_size divisible by num_attention_heads = ${c.num_attention_heads}`,
    );
  }
  if (c.model_type === "qwen2" && !c.attention_bias) {
    throw new ModelConfigError("attention_bias", "qwen2 always has q/k/v biases");
  }
  for (const field of ["bos_token_id", "pad_token_id"] as const) {
    const id = c[field];
    if (id !== null && id >= c.vocab_size) {
      throw new ModelConfigError(field, `${id} is outside the vocabulary (vocab_size ${c.vocab_size})`);
    }
  }
  for (const id of eosTokenIds(c)) {
    if (id >= c.vocab_size) {
      throw new ModelConfigError(
        "eos_token_id",
        `${id} is outside the vocabulary (vocab_size ${c.vocab_size})`,
      );
    }
  }
  return c;
}

function checkFeatures(raw: Record<string, unknown>): void {
  if (raw.hidden_act !== undefined && raw.hidden_act !== "silu") {
    throw new ModelConfigError(
      "hidden_act",
      `only "silu" is supported, got ${JSON.stringify(raw.hidden_act)}`,
    );
  }
  if (raw.rope_scaling !== undefined && raw.rope_scaling !== null) {
    throw new ModelConfigError("rope_scaling", "RoPE scaling (YaRN, linear, dynamic, …) is not supported");
  }
  if (raw.rope_parameters !== undefined && raw.rope_parameters !== null) {
    const rp = raw.rope_parameters as Record<string, unknown>;
    if (typeof rp !== "object" || (rp.rope_type !== undefined && rp.rope_type !== "default")) {
      throw new ModelConfigError("rope_parameters", `only rope_type "default" is supported`);
    }
    if (raw.rope_theta !== undefined && rp.rope_theta !== undefined && rp.rope_theta !== raw.rope_theta) {
      throw new ModelConfigError("rope_parameters.rope_theta", "disagrees with rope_theta");
    }
  }
  if (raw.use_sliding_window === true) {
    throw new ModelConfigError("use_sliding_window", "sliding-window attention is not supported");
  }
  if (raw.layer_types !== undefined && raw.layer_types !== null) {
    const types = raw.layer_types;
    if (!Array.isArray(types) || types.some((t) => t !== "full_attention")) {
      throw new ModelConfigError("layer_types", `only "full_attention" layers are supported`);
    }
  }
  if (raw.attention_dropout !== undefined && raw.attention_dropout !== 0) {
    throw new ModelConfigError(
      "attention_dropout",
      `must be 0, got ${JSON.stringify(raw.attention_dropout)}`,
    );
  }
  if (raw.use_mrope !== undefined && raw.use_mrope !== false) {
    throw new ModelConfigError("use_mrope", "multimodal RoPE is not supported");
  }
  if (raw.quantization_config !== undefined && raw.quantization_config !== null) {
    throw new ModelConfigError("quantization_config", "quantized checkpoints are not supported");
  }
  if (raw.torch_dtype !== undefined && raw.dtype !== undefined && raw.torch_dtype !== raw.dtype) {
    throw new ModelConfigError("dtype", "disagrees with torch_dtype");
  }
}

/** Which projections carry a bias. */
export function qwenBiases(config: QwenConfig): { readonly qkv: boolean; readonly o: boolean } {
  return config.model_type === "qwen2"
    ? { qkv: true, o: false }
    : { qkv: config.attention_bias, o: config.attention_bias };
}

/** Whether the architecture has RMSNorms on q and k (per head, over head_dim). */
export function hasQkNorm(config: QwenConfig): boolean {
  return config.model_type === "qwen3";
}

/** The eos ids as a list (empty when the config names none). */
export function eosTokenIds(config: Pick<QwenConfig, "eos_token_id">): number[] {
  const eos = config.eos_token_id;
  if (eos === null) return [];
  return typeof eos === "number" ? [eos] : [...eos];
}

/** The config as HF `config.json` content (what `transformers` loads). */
export function modelConfigToJson(config: QwenConfig): Record<string, unknown> {
  const c = validateQwenConfig(config);
  const json: Record<string, unknown> = {
    architectures: [ARCHITECTURE_OF[c.model_type]],
    ...c,
    hidden_act: "silu",
    attention_dropout: 0,
    rope_scaling: null,
    use_sliding_window: false,
    use_cache: true,
  };
  if (c.model_type === "qwen2") delete json.attention_bias; // not a Qwen2Config field
  return json;
}

/**
 * A tiny Qwen3 for the task models trained from scratch on CPU: 512 tokens (the byte tokenizer
 * uses 259 of them), hidden 256, 4 layers, 4 heads of 64, 2 KV heads, MLP 1024, tied embeddings.
 * Token ids match `ByteTokenizer`: 256 = <|endoftext|> (bos/pad), 258 = <|im_end|> (eos).
 */
export function tinyQwenConfig(overrides: Partial<QwenConfig> = {}): QwenConfig {
  const base: QwenConfig = {
    model_type: "qwen3",
    vocab_size: 512,
    hidden_size: 256,
    intermediate_size: 1024,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 64,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 2048,
    tie_word_embeddings: true,
    attention_bias: false,
    initializer_range: 0.02,
    bos_token_id: 256,
    eos_token_id: 258,
    pad_token_id: 256,
    torch_dtype: "float32",
  };
  const merged = { ...base, ...overrides };
  // A qwen2 override keeps head_dim consistent unless the caller set it, and has q/k/v biases.
  if (merged.model_type === "qwen2") {
    if (overrides.head_dim === undefined) merged.head_dim = merged.hidden_size / merged.num_attention_heads;
    if (overrides.attention_bias === undefined) merged.attention_bias = true;
  }
  return validateQwenConfig(merged);
}
