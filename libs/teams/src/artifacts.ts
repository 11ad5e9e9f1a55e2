/**
 * What of a trainer checkpoint is published: the files inference needs (HF layout: config.json,
 * model.safetensors, tokenizer files) — never the optimizer state or the trainer's bookkeeping,
 * which only a resumed training run needs and which would triple the download.
 */
import { decodeCheckpoint, type QwenConfig, qwenParameterCount } from "@troupe/engine";

/** Checkpoint files that are training state, not model: left out of a published team. */
export const TRAINING_ONLY_FILES: ReadonlySet<string> = new Set([
  "optimizer.safetensors",
  "trainer_state.json",
]);

/** The checkpoint's serving files (everything but the training state). */
export function servingFiles(checkpoint: Readonly<Record<string, Uint8Array>>): Record<string, Uint8Array> {
  return Object.fromEntries(Object.entries(checkpoint).filter(([name]) => !TRAINING_ONLY_FILES.has(name)));
}

/** e.g. "qwen3 hidden 128 × 2 layers, 4 heads (2 kv), vocab 512". */
export function describeModel(config: QwenConfig): string {
  return (
    `${config.model_type} hidden ${config.hidden_size} × ${config.num_hidden_layers} layers, ` +
    `${config.num_attention_heads} heads (${config.num_key_value_heads} kv), vocab ${config.vocab_size}`
  );
}

/** Model description and parameter count of a checkpoint (validates it: a broken checkpoint is not published). */
export function checkpointSummary(files: Readonly<Record<string, Uint8Array>>): {
  model: string;
  parameters: number;
  config: QwenConfig;
} {
  const { config } = decodeCheckpoint(files);
  return { model: describeModel(config), parameters: qwenParameterCount(config), config };
}
