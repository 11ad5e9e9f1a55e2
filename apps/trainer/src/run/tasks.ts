/**
 * The tasks of a run: a training step's, derived from the run seed and the step, and the held-out
 * ones, the same for every run of an environment.
 */
import { deriveSeed } from "@troupe/core";
import type { TrainerEnvironment } from "../envs.ts";
import type { Recipe } from "../recipe.ts";

/** Test tasks depend on the environment alone (seed 0 of the test stream), never on the run. */
export function evalTasks(trainerEnv: TrainerEnvironment, recipe: Recipe, count = recipe.train.evalTasks) {
  return trainerEnv.generateTasks("test", count, 0);
}

export function trainTasks(trainerEnv: TrainerEnvironment, recipe: Recipe, step: number) {
  return trainerEnv.generateTasks(
    "train",
    recipe.train.tasksPerStep,
    deriveSeed(recipe.seed, "train-tasks", step),
  );
}
