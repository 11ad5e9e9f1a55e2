/**
 * Starting a run (launch.ts): every check before anything is written. Each failing check below is
 * one RecipeError line, and the store holds not a single object afterwards — whether the run is
 * started by the tests' trainRun, by compare/sweep's runRecipe or by the `train` command. A run
 * that passes writes its config, then trains.
 */
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore, RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { runRecipe } from "../../src/experiments/run-recipe.ts";
import { loadRecipeText, type Recipe, RecipeError } from "../../src/recipe.ts";
import { checkRun, launchRun, storedRecipeIs, writeRunConfig } from "../../src/run/launch.ts";
import {
  quiet,
  TINY_ATGRPO,
  TINY_PLAN_PATH,
  tempRoot,
  tinyRecipeText,
  trainerInProcess,
  trainRun,
} from "../tiny.ts";

const root = tempRoot("launch");

/** The tiny AT-GRPO recipe of one step, storing in `store`, with `--set` overrides. */
const tinyRecipe = (store: string, overrides: readonly string[] = []) =>
  loadRecipeText(
    tinyRecipeText(
      "tiny",
      3,
      store,
      `${TINY_ATGRPO}
train: { steps: 1, tasksPerStep: 1, evalEvery: 0, evalTasks: 1 }`,
    ),
    overrides,
  );

/** Each check the launch makes, as a `--set` that fails it, and the error line it gives. */
const FAILING: readonly [check: string, set: string, error: RegExp][] = [
  ["the memory budget", "memoryBudget=400MiB", /memoryBudget 400 MiB is less than the trainer holds/],
  [
    "the sampling roles",
    "sampling.roles={pilot: {temperature: 0}}",
    /sampling\.roles\.pilot: the team has no role "pilot"/,
  ],
  [
    "the warm start's roles",
    "sft.mistakeRoles=[pilot]",
    /sft\.mistakeRoles: "pilot" is not a role of this team/,
  ],
  [
    "the warm start's thresholds",
    "sft.stopAtNll={pilot: 0.1}",
    /sft\.stopAtNll: "pilot" is not a role of this team/,
  ],
  [
    "the demonstrations' environment",
    "sft.environmentOptions={maxTurns: 3}",
    /sft\.environmentOptions: maxTurns cannot differ/,
  ],
];

/** Every file under `folder` (none when it does not exist). */
function filesUnder(folder: string): string[] {
  try {
    return readdirSync(folder, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));
  } catch {
    return [];
  }
}

describe("a failing check writes nothing to the store", () => {
  for (const [check, set, error] of FAILING) {
    it(`${check}: trainRun and runRecipe`, async () => {
      const folder = join(root, check.replace(/\W+/g, "-"));
      const recipe = tinyRecipe(folder, [set]);
      const store = new FileStore(folder);
      await expect(checkRun(recipe, store)).rejects.toThrow(RecipeError);
      await expect(trainRun(recipe, store, "run")).rejects.toThrow(error);
      await expect(runRecipe({ recipe, runId: "run", store, reporter: quiet })).rejects.toThrow(error);
      expect(filesUnder(folder)).toEqual([]);
    });
  }

  it("the `train` command: one error line, no run folder", async () => {
    const folder = join(root, "command");
    const recipePath = join(root, "command.yaml");
    writeFileSync(recipePath, `name: tiny\nstore: file://${folder}\n${TINY_PLAN_PATH}\n${TINY_ATGRPO}\n`);
    const result = await trainerInProcess([
      "train",
      "--recipe",
      recipePath,
      "--set",
      "sft.mistakeRoles=[pilot]",
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/sft\.mistakeRoles: "pilot" is not a role of this team/);
    expect(filesUnder(folder)).toEqual([]);
  });
});

describe("a run that passes every check", () => {
  it("writes its config before its engine works, and trains", async () => {
    const folder = join(root, "passes");
    const recipe = tinyRecipe(folder);
    const store = new FileStore(folder);
    const seen = await launchRun(
      { recipe, runStore: new RunStore(store, "run"), reporter: quiet },
      async () => filesUnder(folder).map((f) => f.slice(folder.length + 1)),
    );
    expect(seen).toEqual(["runs/run/config.json"]);
    const { summary } = await trainRun(recipe, store, "trained");
    expect(summary.lastCommittedStep).toBe(0);
  });
});

describe("writeRunConfig", () => {
  it("accepts the same recipe again, and a stored config that parses to it", async () => {
    const folder = join(root, "config");
    const runStore = new RunStore(new FileStore(folder), "run");
    const recipe = tinyRecipe(folder);
    await writeRunConfig(runStore, recipe);
    await writeRunConfig(runStore, recipe);
    // A config written before sft.schedule had its default: the same recipe once parsed.
    const { schedule: _schedule, ...olderSft } = recipe.sft!;
    await runStore.replaceConfig({ ...recipe, sft: olderSft });
    await writeRunConfig(runStore, recipe);
  });

  it("refuses another recipe under the same run id in one line", async () => {
    const folder = join(root, "config-other");
    const runStore = new RunStore(new FileStore(folder), "run");
    await writeRunConfig(runStore, tinyRecipe(folder));
    const other: Recipe = tinyRecipe(folder, ["optimizer.lr=0.01"]);
    await expect(writeRunConfig(runStore, other)).rejects.toThrow(
      /^run run already exists in file:.* with a different recipe: rerun with the settings it was started with/,
    );
  });
});

describe("storedRecipeIs", () => {
  it("is the stored recipe's: not another, not a missing config, and with anyStore wherever its store was", async () => {
    const folder = join(root, "stored");
    const runStore = new RunStore(new FileStore(folder), "run");
    const recipe = tinyRecipe(folder);
    expect(await storedRecipeIs(runStore, recipe)).toBe(false);
    await writeRunConfig(runStore, recipe);
    expect(await storedRecipeIs(runStore, recipe)).toBe(true);
    expect(await storedRecipeIs(runStore, tinyRecipe(folder, ["optimizer.lr=0.01"]))).toBe(false);
    const moved = { ...recipe, store: "file:///elsewhere" };
    expect(await storedRecipeIs(runStore, moved)).toBe(false);
    expect(await storedRecipeIs(runStore, moved, { anyStore: true })).toBe(true);
    await runStore.replaceConfig({ name: 3 });
    expect(await storedRecipeIs(runStore, recipe)).toBe(false);
  });
});
