/**
 * The trainer builds environments through the shared registry in @troupe/envs (the API and the
 * evaluator serve published teams through the same one). Environments that run the agents' code
 * get one sandbox per process (bubblewrap, as many runs at once as there are cores, in a small
 * service process that starts the runs), made up front by
 * `checkRecipeSandbox` or when the first code runs (the start evaluation, before any step); without
 * bubblewrap that is a RecipeError line, unless the recipe says `environment.unsafe: true` (rlimits only).
 */
import type { Team } from "@troupe/core";
import {
  configuredTeam,
  createEnvironment as createRegistered,
  needsSandbox,
  type RegisteredEnvironment,
  withBaseline,
} from "@troupe/envs";
import {
  type ConnectedRunner,
  createSandboxService,
  type LiveRun,
  type RunRequest,
  type SandboxService,
  SandboxUnavailableError,
} from "@troupe/sandbox";

import { type Recipe, RecipeError } from "./recipe.ts";

export type TrainerEnvironment = RegisteredEnvironment;

/** The environment's team for a recipe: its specialisation, with the recipe's turn overrides. */
export const recipeTeam = configuredTeam;

const sandboxes = new Map<boolean, Promise<SandboxService>>();

/**
 * The process's sandbox (one per `unsafe` setting), in a service process of its own: a trainer
 * holding its models forks slowly (50 ms a run's process at 800 MiB, on the JavaScript thread;
 * @troupe/sandbox service.ts); bubblewrap missing is a RecipeError line.
 */
function sandbox(unsafe: boolean): Promise<SandboxService> {
  let made = sandboxes.get(unsafe);
  if (!made) {
    // A failure is kept too: every later run gets the same one line at once, not another probe.
    made = createSandboxService({ unsafe }).catch((error: unknown) => {
      if (error instanceof SandboxUnavailableError) {
        throw new RecipeError(
          `environment: the agents' code must run in a sandbox, and bubblewrap cannot run here (${error.reason}); ` +
            "install it (bash tools/system-deps.sh) or set environment.unsafe: true to run with rlimits only, which does NOT contain hostile code",
        );
      }
      throw error;
    });
    sandboxes.set(unsafe, made);
  }
  return made;
}

/** A runner that makes the sandbox when code first runs, so building an environment stays synchronous. */
function lazyRunner(unsafe: boolean): ConnectedRunner {
  return {
    run: async (request: RunRequest) => (await sandbox(unsafe)).run(request),
    runConnected: async <T>(
      requests: readonly RunRequest[],
      talk: (runs: readonly LiveRun[]) => Promise<T>,
    ) => (await sandbox(unsafe)).runConnected(requests, talk),
  };
}

const recipeNeedsSandbox = (recipe: Recipe) =>
  needsSandbox({ name: recipe.environment.name, options: recipe.environment.options });

/** Before any work: a recipe whose agents' code runs gets its sandbox now (or a RecipeError line). */
export async function checkRecipeSandbox(recipe: Recipe): Promise<void> {
  if (recipeNeedsSandbox(recipe)) await sandbox(recipe.environment.unsafe ?? false);
}

/** The recipe's environment and its team (answered a baseline's way when the recipe names one). */
export function recipeEnvironment(recipe: Recipe): { trainerEnv: TrainerEnvironment; team: Team } {
  const options = recipeNeedsSandbox(recipe)
    ? { ...recipe.environment.options, runner: lazyRunner(recipe.environment.unsafe ?? false) }
    : recipe.environment.options;
  const trainerEnv = createEnvironment(recipe.environment.name, options);
  const team = recipeTeam(trainerEnv, recipe.team);
  if (recipe.environment.baseline === undefined) return { trainerEnv, team };
  const wrapped = withBaseline(trainerEnv, team, recipe.environment.baseline);
  return { trainerEnv: wrapped.registered, team: wrapped.team };
}

/** A warm start needs the environment's solver: a recipe with `sft` steps and none is one line, before any work. */
export function checkDemonstrations(recipe: Recipe, trainerEnv: TrainerEnvironment): void {
  if ((recipe.sft?.steps ?? 0) > 0 && trainerEnv.demo === undefined) {
    throw new RecipeError(
      `environment "${recipe.environment.name}" has no solver demonstrations (an entry's demo, a data file's demonstrations): remove the sft section, or give it a solver (docs/your-own-task.md)`,
    );
  }
}

export function createEnvironment(name: string, options: Record<string, unknown>): TrainerEnvironment {
  try {
    return createRegistered(name, options);
  } catch (error) {
    throw new RecipeError(`recipe: ${(error as Error).message}`);
  }
}
