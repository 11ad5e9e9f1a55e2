/**
 * A policy checkpoint as files in the HF layout, so the same bytes load here, in the GPU worker and
 * in `transformers`:
 *
 *   config.json              HF model config (modelConfigToJson)
 *   model.safetensors        weights, HF names, float32 (or bf16 on request)
 *   tokenizer.json, tokenizer_config.json   (Tokenizer.toFiles())
 *   optimizer.safetensors    AdamW moments `<name>.exp_avg`, `<name>.exp_avg_sq`, step in metadata (optional)
 *   trainer_state.json       `{format_version, optimizer_step, …}` (optional; extra keys are kept)
 *
 * `decodeCheckpoint` validates everything and names the file (and tensor or field) that is wrong.
 */
import { z } from "zod";
import { modelConfigToJson, parseModelConfigWithWarnings, type QwenConfig } from "./model-config.ts";
import { type AdamWState, decodeOptimizerState, encodeOptimizerState } from "./optimizer.ts";
import { readSafetensorsWeights, writeSafetensors } from "./safetensors.ts";
import type { Weights } from "./tensor.ts";
import { loadTokenizer, type Tokenizer } from "./tokenizer.ts";
import type { CheckpointFiles } from "./types.ts";
import { checkWeightsAgainstConfig } from "./weights.ts";

export const TRAINER_STATE_FORMAT_VERSION = 1;

export const TrainerStateSchema = z.looseObject({
  format_version: z.literal(TRAINER_STATE_FORMAT_VERSION),
  /** Optimizer updates applied to these weights. */
  optimizer_step: z.number().int().min(0),
});
export type TrainerState = z.infer<typeof TrainerStateSchema>;

export interface Checkpoint {
  readonly config: QwenConfig;
  readonly weights: Weights;
  readonly tokenizer: Tokenizer;
  readonly optimizerState?: AdamWState | undefined;
  readonly trainerState?: TrainerState | undefined;
}

export interface DecodedCheckpoint extends Checkpoint {
  /** Unknown config.json fields that were ignored. */
  readonly warnings: readonly string[];
}

export interface EncodeCheckpointOptions {
  /** dtype of model.safetensors; F32 (default) is exact, BF16 halves the size. */
  readonly weightsDtype?: "F32" | "BF16";
}

const utf8 = new TextEncoder();

export function encodeCheckpoint(
  checkpoint: Checkpoint,
  options: EncodeCheckpointOptions = {},
): CheckpointFiles {
  const { config, weights, tokenizer } = checkpoint;
  checkWeightsAgainstConfig(weights, config);
  const tokenizerFiles = tokenizer.toFiles();
  if (tokenizer.vocabSize > config.vocab_size) {
    throw new Error(
      `checkpoint: the tokenizer has ${tokenizer.vocabSize} ids, more than vocab_size ${config.vocab_size}`,
    );
  }
  const files: Record<string, Uint8Array> = {
    "config.json": utf8.encode(`${JSON.stringify(modelConfigToJson(config), null, 2)}\n`),
    "model.safetensors": writeSafetensors(weights, {
      metadata: { format: "pt" }, // what transformers' save_pretrained writes
      floatDtype: options.weightsDtype ?? "F32",
    }),
    ...tokenizerFiles,
  };
  if (checkpoint.optimizerState !== undefined) {
    files["optimizer.safetensors"] = encodeOptimizerState(checkpoint.optimizerState, weights);
  }
  if (checkpoint.trainerState !== undefined) {
    const state = parseTrainerState(checkpoint.trainerState);
    files["trainer_state.json"] = utf8.encode(`${JSON.stringify(state, null, 2)}\n`);
  }
  return files;
}

export function decodeCheckpoint(files: CheckpointFiles): DecodedCheckpoint {
  const need = (name: string): Uint8Array => {
    const bytes = files[name];
    if (bytes === undefined) {
      throw new Error(
        `checkpoint: ${name} is missing (files: ${Object.keys(files).sort().join(", ") || "none"})`,
      );
    }
    return bytes;
  };
  const { config, warnings } = parseModelConfigWithWarnings(parseJson(need("config.json"), "config.json"));
  let weights: Weights;
  try {
    weights = readSafetensorsWeights(need("model.safetensors")).weights;
    checkWeightsAgainstConfig(weights, config);
  } catch (e) {
    throw new Error(`checkpoint: model.safetensors: ${(e as Error).message}`);
  }
  let tokenizer: Tokenizer;
  try {
    tokenizer = loadTokenizer(files);
  } catch (e) {
    throw new Error(`checkpoint: ${(e as Error).message}`);
  }
  if (tokenizer.vocabSize > config.vocab_size) {
    throw new Error(
      `checkpoint: the tokenizer has ${tokenizer.vocabSize} ids, more than config.json vocab_size ${config.vocab_size}`,
    );
  }
  let optimizerState: AdamWState | undefined;
  if (files["optimizer.safetensors"] !== undefined) {
    try {
      optimizerState = decodeOptimizerState(files["optimizer.safetensors"], weights);
    } catch (e) {
      throw new Error(`checkpoint: ${(e as Error).message}`);
    }
  }
  let trainerState: TrainerState | undefined;
  if (files["trainer_state.json"] !== undefined) {
    trainerState = parseTrainerState(parseJson(files["trainer_state.json"], "trainer_state.json"));
  }
  if (
    optimizerState !== undefined &&
    trainerState !== undefined &&
    optimizerState.step !== trainerState.optimizer_step
  ) {
    throw new Error(
      `checkpoint: optimizer.safetensors is at step ${optimizerState.step}, trainer_state.json says optimizer_step ${trainerState.optimizer_step}`,
    );
  }
  return { config, weights, tokenizer, optimizerState, trainerState, warnings };
}

function parseTrainerState(value: unknown): TrainerState {
  const parsed = TrainerStateSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`checkpoint: trainer_state.json: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  return parsed.data;
}

function parseJson(bytes: Uint8Array, name: string): unknown {
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw new Error(`checkpoint: ${name}: not valid JSON: ${(e as Error).message}`);
  }
}
