/**
 * A run's tasks: a training step's are drawn from the run seed and the step (the same on a rerun,
 * different between steps and seeds); the held-out ones depend on the environment alone.
 */
import { describe, expect, it } from "vitest";
import { recipeEnvironment } from "../../src/envs.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { evalTasks, trainTasks } from "../../src/run/tasks.ts";
import { TINY_ONE_TURN } from "../tiny.ts";

const recipe = (seed: number, sets: string[] = []) =>
  loadRecipeText(
    `name: tasks\nseed: ${seed}\n${TINY_ONE_TURN}\ntrain: { tasksPerStep: 3, evalTasks: 5 }\n`,
    sets,
  );
const ids = (tasks: readonly { id: string }[]) => tasks.map((t) => t.id);

describe("run tasks", () => {
  it("a step's training tasks: tasksPerStep of the train split, a function of (seed, step)", () => {
    const r = recipe(7);
    const { trainerEnv } = recipeEnvironment(r);
    const step0 = trainTasks(trainerEnv, r, 0);
    expect(step0).toHaveLength(3);
    expect(step0.map((t) => t.split)).toEqual(["train", "train", "train"]);
    // Again in a fresh environment: the same tasks.
    expect(trainTasks(recipeEnvironment(r).trainerEnv, r, 0)).toEqual(step0);
    expect(ids(trainTasks(trainerEnv, r, 1))).not.toEqual(ids(step0));
    expect(ids(trainTasks(trainerEnv, recipe(8), 0))).not.toEqual(ids(step0));
  });

  it("held-out tasks: train.evalTasks of the test split, the same for every run seed", () => {
    const a = recipe(7);
    const b = recipe(8);
    const held = evalTasks(recipeEnvironment(a).trainerEnv, a);
    expect(held).toHaveLength(5);
    expect(held.map((t) => t.split)).toEqual(Array(5).fill("test"));
    expect(evalTasks(recipeEnvironment(b).trainerEnv, b)).toEqual(held);
    // A count given explicitly: the first tasks of the same stream.
    expect(ids(evalTasks(recipeEnvironment(a).trainerEnv, a, 2))).toEqual(ids(held).slice(0, 2));
    const train = new Set(ids(trainTasks(recipeEnvironment(a).trainerEnv, a, 0)));
    expect(ids(held).some((id) => train.has(id))).toBe(false);
  });
});
