/**
 * One recipe run to the end, resumably, as `trainer:compare` and `trainer:sweep` need it: the warm
 * start (cached in the store) unless the run already has committed steps, then RL with `train()`,
 * which continues after the newest committed step. Its result is read back from the run's stored
 * metrics (run-results.ts).
 */
import { type Team, teamPolicies } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import { type ObjectStore, RunStore } from "@troupe/storage";
import { checkEngineRecipe, createEngine } from "../engines.ts";
import { checkRecipeSandbox, recipeEnvironment, type TrainerEnvironment } from "../envs.ts";
import { checkRoleSampling } from "../evaluate.ts";
import { type Recipe, RecipeError } from "../recipe.ts";
import type { TrainReporter } from "../run/context.ts";
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
 * its result, or undefined when `stopRequested` stopped it first.
 */
export async function runRecipe(options: RunRecipeOptions): Promise<RunResult | undefined> {
  const { recipe, runId, store, reporter } = options;
  const { trainerEnv, team } = recipeEnvironment(recipe);
  checkEngineRecipe(recipe, teamPolicies(team)); // before the run's folder is written
  checkRoleSampling(recipe, team);
  await checkRecipeSandbox(recipe); // code-running environments: bubblewrap, or a RecipeError line
  const runStore = new RunStore(store, runId);
  try {
    await runStore.writeConfig(recipe);
  } catch (error) {
    if (/already exists with a different config/.test((error as Error).message)) {
      throw new RecipeError(
        `run ${runId} already exists in ${recipe.store} with a different recipe: rerun with the settings it ` +
          "was started with, or pass another --id",
      );
    }
    throw error;
  }
  const engine = await createEngine(recipe, teamPolicies(team));
  const started = performance.now();
  try {
    const summary = await warmStartAndTrain({
      recipe,
      trainerEnv,
      team,
      engine,
      runStore,
      reporter,
      ...(options.stopRequested ? { stopRequested: options.stopRequested } : {}),
    });
    if (summary.stoppedEarly) return undefined;
    await options.afterRun?.({ engine, trainerEnv, team });
  } finally {
    await engine.close();
  }
  const seconds = (performance.now() - started) / 1000;
  return finishedRunResult(runStore, recipe, seconds);
}
