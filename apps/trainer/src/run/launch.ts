/**
 * Starting a run, the one way `train`, `compare`, `sweep`, the rollout worker and the tests do it:
 *
 *   checkRun     every check, writing nothing: the recipe's environment and team, the engine (kind,
 *                model shape, torch layout, memory budget against the longest sequence), the roles
 *                of `sampling.roles`, the warm start's demonstrations and settings, the sandbox of
 *                code-running environments, and the store (writable, or an S3 probe)
 *   config       the run's config.json: written once, or kept as it is on a resume
 *   engine       created last, and closed when the run's work returns or throws
 *
 * A check that fails is one RecipeError (or StoreError) line and leaves the store as it was.
 */
import { stableHash, type Team, teamPolicies } from "@troupe/core";
import { checkStore, ObjectNotFoundError, type ObjectStore, type RunStore } from "@troupe/storage";
import { checkEngineRecipe, createEngine } from "../engines.ts";
import {
  checkDemonstrations,
  checkRecipeSandbox,
  recipeEnvironment,
  type TrainerEnvironment,
} from "../envs.ts";
import { parseRecipe, type Recipe, RecipeError } from "../recipe.ts";
import { checkRoleSampling } from "../sampling.ts";
import type { RunContext, TrainReporter } from "./context.ts";
import { checkWarmStart } from "./warm-start.ts";

/** What a launched run works with: a run's context, the run itself in place of its store. */
export interface LaunchedRun extends Omit<RunContext, "store"> {
  readonly runStore: RunStore;
}

export interface RunLaunch {
  readonly recipe: Recipe;
  readonly runStore: RunStore;
  readonly reporter: TrainReporter;
  /**
   * The run's config: "write" (default) writes it, or finds the same recipe there (a run started
   * again, e.g. by compare after an interruption); "keep" leaves the stored one (a resume);
   * "replace" records this recipe over it (a resume that extends the run's steps or moved store).
   */
  readonly config?: "write" | "keep" | "replace";
}

/**
 * Every check a run makes before it writes anything; the recipe's environment and team on
 * success. A failure is one RecipeError or StoreError line.
 */
export async function checkRun(
  recipe: Recipe,
  store: ObjectStore,
): Promise<{ trainerEnv: TrainerEnvironment; team: Team }> {
  const { trainerEnv, team } = recipeEnvironment(recipe);
  checkEngineRecipe(recipe, teamPolicies(team));
  checkRoleSampling(recipe, team);
  checkDemonstrations(recipe, trainerEnv);
  checkWarmStart(recipe, trainerEnv, team);
  await checkRecipeSandbox(recipe);
  await checkStore(store, { write: true });
  return { trainerEnv, team };
}

/**
 * Checks the run (checkRun), writes its config, creates the engine and hands all of it to `work`;
 * the engine is closed when `work` returns or throws.
 */
export async function launchRun<T>(launch: RunLaunch, work: (run: LaunchedRun) => Promise<T>): Promise<T> {
  const { recipe, runStore, reporter } = launch;
  const { trainerEnv, team } = await checkRun(recipe, runStore.store);
  const config = launch.config ?? "write";
  if (config === "write") await writeRunConfig(runStore, recipe);
  else if (config === "replace") await runStore.replaceConfig(recipe);
  const engine = await createEngine(recipe, teamPolicies(team));
  try {
    return await work({ recipe, trainerEnv, team, engine, runStore, reporter });
  } finally {
    await engine.close();
  }
}

/**
 * Writes the run's config, or accepts the one already there when it is the same recipe: the same
 * bytes, or a config written before a field had its default, which parses to the same recipe.
 * Another recipe under the same run id is one RecipeError line.
 */
export async function writeRunConfig(runStore: RunStore, recipe: Recipe): Promise<void> {
  try {
    await runStore.writeConfig(recipe);
    return;
  } catch (error) {
    if (!/already exists with a different config/.test((error as Error).message)) throw error;
  }
  if (!(await storedRecipeIs(runStore, recipe))) {
    throw new RecipeError(
      `run ${runStore.runId} already exists in ${recipe.store} with a different recipe: rerun with the settings it ` +
        "was started with, or start another run (another --id or --run)",
    );
  }
}

/**
 * Whether the run's stored config is `recipe`: it parses (with this version's defaults) to the
 * same recipe, with `anyStore` wherever its store was then (a store copied or moved since). A
 * missing config or one this version cannot parse is not.
 */
export async function storedRecipeIs(
  runStore: RunStore,
  recipe: Recipe,
  options: { readonly anyStore?: boolean } = {},
): Promise<boolean> {
  let config: unknown;
  try {
    config = await runStore.readConfig();
  } catch (error) {
    // No config is not this recipe; a store that cannot be read is its own error.
    if (error instanceof ObjectNotFoundError) return false;
    throw error;
  }
  try {
    const stored = parseRecipe(config);
    return stableHash(options.anyStore ? { ...stored, store: recipe.store } : stored) === stableHash(recipe);
  } catch {
    // A stored config this version cannot parse is not this recipe.
    return false;
  }
}
