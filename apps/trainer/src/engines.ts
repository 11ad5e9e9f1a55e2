/** Builds the engine a recipe names, with one policy per id the team uses. */
import { deriveSeed, type PolicyId } from "@troupe/core";
import { type Engine, tinyQwenConfig } from "@troupe/engine";
import { createOnnxEngine } from "@troupe/engine-onnx";
import type { Recipe } from "./recipe.ts";

export async function createEngine(recipe: Recipe, policyIds: readonly PolicyId[]): Promise<Engine> {
  switch (recipe.engine.kind) {
    case "onnx": {
      const { from, ...model } = recipe.model;
      if (from !== undefined) {
        throw new Error(
          `recipe: model.from: loading "${from}" is done with --resume or trainer:sft checkpoints in this version`,
        );
      }
      const headDim = model.hidden_size / model.num_attention_heads;
      if (!Number.isInteger(headDim)) {
        throw new Error(
          `recipe: model.hidden_size (${model.hidden_size}) must be divisible by model.num_attention_heads (${model.num_attention_heads})`,
        );
      }
      return createOnnxEngine({
        policies: policyIds.map((id) => ({
          id,
          config: tinyQwenConfig({ ...model, head_dim: headDim }),
          seed: deriveSeed(recipe.seed, "init", id),
        })),
      });
    }
    default:
      throw new Error(
        `recipe: engine.kind: "${recipe.engine.kind}" is served by @troupe/engine-${recipe.engine.kind}, which the trainer does not launch yet; use "onnx"`,
      );
  }
}
