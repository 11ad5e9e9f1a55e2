/**
 * `sft` in this process: the recipe's supervised warm start only, its held-out evaluation, and
 * where it is in the store; a second call finds it in the cache; a recipe without `sft` is one
 * RecipeError line.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commandSft } from "../../src/commands/sft.ts";
import { RecipeError } from "../../src/recipe.ts";
import { inProcess, tinyCommandRecipe } from "../tiny.ts";

const { recipePath, storeRoot } = tinyCommandRecipe(
  "sf",
  `sft: { steps: 1, batchSize: 4 }
train: { steps: 1, tasksPerStep: 2, evalEvery: 0, evalTasks: 2 }`,
);
const sft = (...args: string[]) => inProcess(() => commandSft(["--recipe", recipePath, ...args]));

describe("sft command", () => {
  it("computes the warm start once, evaluates it, and finds it in the cache the second time", async () => {
    const first = await sft();
    expect(first.code).toBe(0);
    const match = /^warm start (sft-[0-9a-f]+): (.*)\n$/.exec(first.stdout);
    expect(match, first.stdout).not.toBeNull();
    const [, runId, where] = match!;
    expect(where).toBe(`${join(storeRoot, "runs", runId!)}/`);
    expect(existsSync(join(storeRoot, "runs", runId!))).toBe(true);
    expect(first.stderr).toMatch(/^warm start 1\/1: nll planner [\d.]+, fixer [\d.]+ /);
    expect(first.stderr).toMatch(
      /\neval before step 0: held-out success [\d.]+% \[[\d.]+, [\d.]+\] on 2 tasks, /,
    );

    const again = await sft();
    expect(again.stdout).toBe(`warm start ${runId} (cached): ${where}\n`);
    // Another warm start (another sft section) is another cached run.
    const other = await sft("--set", "sft.steps=2");
    expect(other.stdout).not.toContain(runId!);
  });

  it("a recipe without sft steps is one RecipeError line", async () => {
    await expect(sft("--set", "sft.steps=0")).rejects.toThrow(
      new RecipeError("recipe has no sft section (or sft.steps is 0)"),
    );
  });
});
