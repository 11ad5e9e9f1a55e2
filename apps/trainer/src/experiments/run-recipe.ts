/**
 * One recipe run to the end, resumably, as `trainer:compare` and `trainer:sweep` need it: the warm
 * start (cached in the store) unless the run already has committed steps, then RL with `train()`,
 * which continues after the newest committed step. Its result is read back from the run's stored
 * metrics (run-results.ts).
 */
import type { Team } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import { type ObjectStore, RunStore } from "@troupe/storage";
import type { TrainerEnvironment } from "../envs.ts";
import type { Recipe } from "../recipe.ts";
import type { TrainReporter } from "../run/context.ts";
import { launchRun } from "../run/launch.ts";
import { warmStartAndTrain } from "../run/warm-start.ts";
import { finishedRunResult, type RunResult } from "./run-results.ts";

export interface RunRecipeOptions {
  readonly recipe: Recipe;
  readonly runId: string;
  readonly store: ObjectStore;
  readonly reporter: TrainReporter;
  /** Passed to train(): true commits the step in flight and stops; runRecipe then returns undefined. */
  readonly stopRequested?: (step: number) => boolean;
  /** After the last step, with the final policies still loaded (compare's pass@k sampling). */
  readonly afterRun?: (run: { engine: Engine; trainerEnv: TrainerEnvironment; team: Team }) => Promise<void>;
}

/**
 * Runs `recipe` as run `runId` to its last step (resuming it if it has committed steps) and returns
 * its result, or undefined when `stopRequested` stopped it first. The run starts as every run does
 * (launch.ts): every check before its config is written.
 */
export async function runRecipe(options: RunRecipeOptions): Promise<RunResult | undefined> {
  const { recipe, runId, store, reporter } = options;
  const runStore = new RunStore(store, runId);
  let started = 0;
  const finished = await launchRun({ recipe, runStore, reporter }, async (run) => {
    started = performance.now();
    const summary = await warmStartAndTrain({
      ...run,
      ...(options.stopRequested ? { stopRequested: options.stopRequested } : {}),
    });
    if (summary.stoppedEarly) return false;
    await options.afterRun?.(run);
    return true;
  });
  if (!finished) return undefined;
  const seconds = (performance.now() - started) / 1000;
  return finishedRunResult(runStore, recipe, seconds);
}
