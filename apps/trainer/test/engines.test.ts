/**
 * The engine a recipe names, as the trainer starts it: a torch engine's worker flags, its team
 * layout (per-role LoRA adapters, per-policy models) and its launch (a process or torchrun).
 */
import { deriveSeed } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { torchProcessOptions, torchTeamLayout, torchWorkerArgs } from "../src/engines.ts";
import { loadRecipeText, type TorchEngineRecipe } from "../src/recipe.ts";
import { MINIMAL_RECIPE as minimal } from "./minimal-recipe.ts";

describe("torch engine", () => {
  it("defaults a torch engine and maps it to worker flags", () => {
    const r = loadRecipeText(minimal, ["engine.kind=torch"]);
    expect(r.engine).toEqual({
      kind: "torch",
      device: "auto",
      dtype: "float32",
      autocast: true,
      chatTemplateKwargs: {},
      gradientCheckpointing: false,
      generator: "auto",
      modelBackend: "auto",
      threads: 0,
      policyModels: {},
      launch: { kind: "process" },
      workerArgs: [],
      startupTimeoutSeconds: 600,
    });
    expect(torchWorkerArgs(r.engine as TorchEngineRecipe)).toEqual([
      "--param-dtype",
      "float32",
      "--generator",
      "auto",
      "--model-backend",
      "auto",
    ]);
    const gpu = loadRecipeText(minimal, [
      "engine.kind=torch",
      "engine.device=cuda:1",
      "engine.dtype=bfloat16",
      "engine.autocast=false",
      "engine.gradientCheckpointing=true",
      "engine.threads=2",
      'engine.workerArgs=["--logprob-batch-size", "4"]',
    ]).engine as TorchEngineRecipe;
    expect(torchWorkerArgs(gpu)).toEqual([
      "--device",
      "cuda:1",
      "--param-dtype",
      "bfloat16",
      "--no-autocast",
      "--gradient-checkpointing",
      "--generator",
      "auto",
      "--model-backend",
      "auto",
      "--threads",
      "2",
      "--logprob-batch-size",
      "4",
    ]);
  });

  it("lays out per-role LoRA adapters, per-policy models and torchrun launches", () => {
    const lora = loadRecipeText(minimal, [
      "engine.kind=torch",
      "engine.lora.r=8",
      "model.from=/models/Qwen2.5-0.5B",
    ]);
    const layout = torchTeamLayout(lora, lora.engine as TorchEngineRecipe, ["planner", "fixer"]);
    expect(layout.models).toEqual({
      base: { kind: "path", path: "/models/Qwen2.5-0.5B", gradientCheckpointing: false },
    });
    expect(layout.policies).toEqual([
      { id: "planner", model: "base", lora: { r: 8 }, seed: deriveSeed(0, "init", "planner") },
      { id: "fixer", model: "base", lora: { r: 8 }, seed: deriveSeed(0, "init", "fixer") },
    ]);

    const full = loadRecipeText(minimal, ["engine.kind=torch", "engine.lora=null", "model.from=/m"]);
    expect(torchTeamLayout(full, full.engine as TorchEngineRecipe, ["a", "b"]).policies).toEqual([
      { id: "a", model: "base" },
      { id: "b", model: "base" },
    ]);

    const mixed = loadRecipeText(minimal, [
      "engine.kind=torch",
      "engine.policyModels.planner=/models/Qwen2.5-1.5B",
    ]);
    const hetero = torchTeamLayout(mixed, mixed.engine as TorchEngineRecipe, ["planner", "fixer"]);
    expect(hetero.policies).toEqual([
      { id: "planner", model: "path:/models/Qwen2.5-1.5B" },
      { id: "fixer", model: "init:fixer" },
    ]);
    expect(hetero.models["init:fixer"]!.kind).toBe("files");
    expect(() => torchTeamLayout(mixed, mixed.engine as TorchEngineRecipe, ["a", "b"])).toThrow(
      /engine\.policyModels\.planner: the team has no policy "planner"/,
    );

    const multi = loadRecipeText(minimal, [
      "engine.kind=torch",
      "engine.launch.kind=torchrun",
      "engine.launch.nprocPerNode=8",
      "engine.launch.nnodes=2",
    ]);
    expect(() => torchProcessOptions(multi.engine as TorchEngineRecipe)).toThrow(
      /engine\.launch\.rdzvEndpoint: required when engine\.launch\.nnodes > 1/,
    );
    const launched = loadRecipeText(minimal, [
      "engine.kind=torch",
      "engine.launch.kind=torchrun",
      "engine.launch.nprocPerNode=8",
    ]);
    expect(torchProcessOptions(launched.engine as TorchEngineRecipe).launch).toEqual({
      kind: "torchrun",
      nprocPerNode: 8,
      nnodes: 1,
      torchrun: "torchrun",
    });
  });
});
