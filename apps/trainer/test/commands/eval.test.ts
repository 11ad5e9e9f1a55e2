/**
 * `eval` in this process: held-out success of a run's checkpoints at its newest (or a given)
 * committed step as one table row; bad flags, a step without checkpoints and a recipe without
 * runs each one RecipeError line.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { commandEval } from "../../src/commands/eval.ts";
import { commandTrain } from "../../src/commands/train.ts";
import { RecipeError } from "../../src/recipe.ts";
import { inProcess, tinyCommandRecipe, writeTinyRecipe } from "../tiny.ts";

const { root, recipePath, storeRoot } = tinyCommandRecipe(
  "ev",
  `train: { steps: 2, tasksPerStep: 2, evalEvery: 0, evalTasks: 2, checkpointEvery: 10 }`,
);
const evalRun = (...args: string[]) => inProcess(() => commandEval(["--recipe", recipePath, ...args]));

beforeAll(async () => {
  const trained = await inProcess(() => commandTrain(["--recipe", recipePath, "--run", "ev-a"]));
  expect(trained.code).toBe(0);
}, 300_000);

describe("eval command", () => {
  it("evaluates the newest run's newest step with checkpoints on the asked number of tasks", async () => {
    const result = await evalRun("--tasks", "3");
    expect(result.code).toBe(0);
    const [header, rule, row] = result.stdout.trim().split("\n");
    expect(rule).toMatch(/^[- ]+$/);
    expect(header!.split(/\s{2,}/)).toEqual([
      "run",
      "step",
      "held-out success",
      "95% CI",
      "team return",
      "tasks",
    ]);
    const cells = row!.split(/\s{2,}/);
    expect(cells[0]).toBe("ev-a");
    expect(cells[1]).toBe("1"); // the last step: kept whatever checkpointEvery says
    expect(cells[2]).toMatch(/^(0\.0|33\.3|66\.7|100\.0)%$/); // k of 3 tasks
    expect(cells[5]).toBe("3");
    // The same evaluation again: the same row.
    expect((await evalRun("--run", "ev-a", "--step", "1", "--tasks", "3")).stdout).toBe(result.stdout);
  });

  it("one RecipeError line for a bad flag, a step without checkpoints, or no run", async () => {
    await expect(evalRun("--step", "two")).rejects.toThrow(
      new RecipeError('--step: expected a whole number ≥ 0, got "two"'),
    );
    await expect(evalRun("--tasks", "0")).rejects.toThrow('--tasks: expected a whole number ≥ 1, got "0"');
    await expect(evalRun("--run", "ev-a", "--step", "0")).rejects.toThrow(
      "--step: run ev-a has no committed step with checkpoints at 0 (steps with checkpoints: 1)",
    );
    mkdirSync(join(root, "other"));
    const other = writeTinyRecipe(join(root, "other"), "other", 1, "strategy: { name: atgrpo }").recipePath;
    // Its store is checked before it is read: a missing folder is named; an empty one has no run.
    const otherStore = join(root, "other", "store");
    await expect(inProcess(() => commandEval(["--recipe", other]))).rejects.toThrow(
      `store file://${otherStore}: the folder does not exist`,
    );
    mkdirSync(otherStore);
    await expect(inProcess(() => commandEval(["--recipe", other]))).rejects.toThrow(
      `eval: no run of recipe "other" with a committed step in file://${otherStore}; pass --run`,
    );
    expect(storeRoot).toBe(join(root, "store"));
  });
});
