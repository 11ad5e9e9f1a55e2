import { parseArgs } from "node:util";
import { teamPolicies } from "@troupe/core";
import { createEngine, policySet } from "../engines.ts";
import { evaluate } from "../evaluate.ts";
import { RecipeError } from "../recipe.ts";
import { loadRecipeFile } from "../recipe-files.ts";
import { consoleReporter } from "../reports/reporter.ts";
import { checkRun } from "../run/launch.ts";
import { evalTasks } from "../run/tasks.ts";
import { warmStart } from "../run/warm-start.ts";
import { evalSampling } from "../sampling.ts";
import { RECIPE_OPTIONS, storeLocation } from "./cli.ts";
import { invokedFrom, resolveRecipePath, storeFor } from "./workspace.ts";

/** `sft`: only the supervised warm start of a recipe (cached in the store, resumable). */
export async function commandSft(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: RECIPE_OPTIONS,
    strict: true,
  });
  const recipe = await loadRecipeFile(resolveRecipePath(values.recipe), values.set);
  if (!recipe.sft || recipe.sft.steps === 0)
    throw new RecipeError("recipe has no sft section (or sft.steps is 0)");
  const store = storeFor(recipe);
  // The checks of every run (launch.ts): the warm start is a run of its own.
  const { trainerEnv, team } = await checkRun(recipe, store);
  const engine = await createEngine(recipe, teamPolicies(team));
  const reporter = consoleReporter();
  const result = await warmStart({ recipe, trainerEnv, team, engine, store, reporter });
  const evalResult = await evaluate({
    trainerEnv,
    team,
    policies: policySet(engine, team, 0),
    tasks: evalTasks(trainerEnv, recipe),
    sampling: evalSampling(recipe),
    seed: recipe.seed,
  });
  reporter.eval(0, evalResult);
  reporter.finish();
  await engine.close();
  process.stdout.write(
    `warm start ${result!.runId}${result!.cached ? " (cached)" : ""}: ${storeLocation(store, `runs/${result!.runId}/`, invokedFrom)}\n`,
  );
  return 0;
}
