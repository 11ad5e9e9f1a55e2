import { parseArgs } from "node:util";
import { teamPolicies } from "@troupe/core";
import { createEngine, policySet } from "../engines.ts";
import { recipeEnvironment } from "../envs.ts";
import { evaluate } from "../evaluate.ts";
import { RecipeError } from "../recipe.ts";
import { loadRecipeFile, parseRunConfig } from "../recipe-files.ts";
import { interval, table } from "../reports/reporter.ts";
import { checkpointedStep, restoreStep } from "../run/checkpoints.ts";
import { evalTasks } from "../run/tasks.ts";
import { evalSampling } from "../sampling.ts";
import { checkedStoreFor, findNewestRun, resolveRecipePath, runIn } from "./workspace.ts";

/** `eval`: held-out success of a run's checkpoints at a step (default: the newest committed). */
export async function commandEval(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      recipe: { type: "string", default: "default" },
      run: { type: "string" },
      step: { type: "string" },
      tasks: { type: "string" },
    },
    strict: true,
  });
  const requestedStep = wholeNumber("--step", values.step, 0);
  const count = wholeNumber("--tasks", values.tasks, 1);
  const base = await loadRecipeFile(resolveRecipePath(values.recipe));
  const store = await checkedStoreFor(base, { write: false });
  const runStore = values.run ? await runIn(store, values.run) : await findNewestRun(store, base);
  if (!runStore) {
    throw new RecipeError(
      `eval: no run of recipe "${base.name}" with a committed step in ${base.store}; pass --run`,
    );
  }
  const runId = runStore.runId;
  const recipe = await parseRunConfig(await runStore.readConfig(), `run ${runId} config`);
  const { trainerEnv, team } = recipeEnvironment(recipe);
  const step = await checkpointedStep(runStore, team, requestedStep, "--step");
  const engine = await createEngine(recipe, teamPolicies(team));
  await restoreStep(engine, runStore, team, step);
  const result = await evaluate({
    trainerEnv,
    team,
    policies: policySet(engine, team, step + 1),
    tasks: evalTasks(trainerEnv, recipe, count ?? recipe.train.evalTasks),
    sampling: evalSampling(recipe),
    seed: recipe.seed,
  });
  await engine.close();
  process.stdout.write(
    `${table([
      {
        run: runId,
        step,
        "held-out success": `${(100 * result.successRate).toFixed(1)}%`,
        "95% CI": interval(result.ci95),
        "team return": result.meanTeamReturn.toFixed(3),
        tasks: result.tasks,
      },
    ])}\n`,
  );
  return 0;
}

/** A whole-number flag at least `min`, or undefined when absent; else an error naming the flag. */
function wholeNumber(flag: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (text.trim() === "" || !Number.isSafeInteger(n) || n < min)
    throw new RecipeError(`${flag}: expected a whole number ≥ ${min}, got "${text}"`);
  return n;
}
