/**
 * Every recipe in apps/trainer/recipes runs end to end on the embedded CPU engine: the recipe as
 * written (environment, team, strategy, warm start) with a tiny budget — one RL step on one task,
 * the smallest groups, a 16-wide model, 8-token answers — and leaves a committed step with every
 * policy's checkpoint, its samples and the held-out evaluations before and after. Code-running
 * recipes run their code in the sandbox. `qwen-gpu` needs a GPU and a downloaded model: only its
 * recipe is checked here.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { teamPolicies } from "@troupe/core";
import { FileStore, RunStore } from "@troupe/storage/node";
import { describe, expect, test } from "vitest";
import { recipeEnvironment } from "../../src/envs.ts";
import { runRecipe } from "../../src/experiments/run-recipe.ts";
import { loadRecipeText, type Recipe } from "../../src/recipe.ts";
import { quiet, TINY_BUDGET, tempRoot } from "../tiny.ts";

const recipesDir = join(import.meta.dirname, "..", "..", "recipes");
const root = tempRoot("recipes");

const GPU_ONLY = new Set(["qwen-gpu"]);
const names = readdirSync(recipesDir)
  .filter((f) => f.endsWith(".yaml"))
  .map((f) => f.slice(0, -".yaml".length))
  .sort();

/** The recipe with the smallest budget that still runs every part of it. */
function tiny(name: string): Recipe {
  const text = readFileSync(join(recipesDir, `${name}.yaml`), "utf8");
  const recipe = loadRecipeText(text, [], name);
  const sets = [
    `store=file://${join(root, name)}`,
    ...TINY_BUDGET,
    // A recipe with ORT's arena for every graph shares its budget between the arenas, which a
    // 4,096-token sequence does not fit: it keeps its own model length (its prompts are short).
    ...(recipe.engine.kind === "onnx" && recipe.engine.memoryArena
      ? [`model.max_position_embeddings=${recipe.model.max_position_embeddings}`]
      : []),
    recipe.strategy.name === "atgrpo" ? "strategy.candidates=2" : "strategy.groupSize=2",
    ...(recipe.sft ? ["sft.steps=1", "sft.batchSize=2"] : []),
  ];
  return loadRecipeText(text, sets, name);
}

describe("recipes", () => {
  test("the recipes of the papers are all there", () => {
    expect(names).toEqual([
      "atgrpo-coder-tester",
      "atgrpo-coder-tester-toy",
      "atgrpo-math-arith",
      "atgrpo-math-tool",
      "atgrpo-planpath-tool",
      "atgrpo-planpath-toolcall",
      "atgrpo-planpath-toolcall-long",
      "atgrpo-sokoban",
      "atgrpo-sudoku",
      "default",
      "magrpo-arxiv",
      "magrpo-coding-toy",
      "magrpo-humaneval",
      "magrpo-tldr",
      "qwen-gpu",
    ]);
    // Each names the paper's setting and the one change for a GPU.
    for (const name of names.filter((n) => !GPU_ONLY.has(n) && n !== "default")) {
      const text = readFileSync(join(recipesDir, `${name}.yaml`), "utf8");
      expect(text, name).toMatch(/^# (MAGRPO paper|Stronger-MAS)/);
      expect(text, name).toMatch(
        /--set (engine\.kind=torch|'engine=\{kind: torch, [^']*\}') .*\n.*--set model\.from=/,
      );
    }
    expect(loadRecipeText(readFileSync(join(recipesDir, "qwen-gpu.yaml"), "utf8")).engine.kind).toBe("torch");
  });

  test.each(names.filter((n) => !GPU_ONLY.has(n)))(
    "%s: one RL step with a tiny budget, committed with its checkpoints",
    async (name) => {
      const recipe = tiny(name);
      const store = new FileStore(join(root, name));
      const runId = `${name}-smoke`;
      const result = await runRecipe({ recipe, runId, store, reporter: quiet });
      expect(result!.steps).toBe(1);
      expect(result!.curve!.map((p) => p.step)).toEqual([0, 1]);
      expect(result!.samples).toBeGreaterThan(0);
      const run = new RunStore(store, runId);
      expect(await run.latestCommittedStep()).toBe(0);
      const { team } = recipeEnvironment(recipe);
      for (const policy of teamPolicies(team)) {
        expect(Object.keys(await run.readCheckpoint(policy, 0)).length, policy).toBeGreaterThan(0);
      }
      const shards = (await run.readStep(0)).shards;
      const agents = new Set([...shards.values()].flat().map((s) => s.provenance.agent));
      expect([...agents].sort()).toEqual(team.roles.map((r) => r.id).sort());
    },
    300_000,
  );
});
