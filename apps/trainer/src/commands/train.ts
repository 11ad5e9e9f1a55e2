import { rm } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { TorchWorkerError, TorchWorkerExited } from "@troupe/engine-torch";
import { FileStore, RunStore } from "@troupe/storage/node";
import { applyOverrides, type Recipe, RecipeError } from "../recipe.ts";
import { loadRecipeFile, parseRunConfig } from "../recipe-files.ts";
import { writeRunReport } from "../reports/report.ts";
import { consoleReporter, evalStepLabel, interval, stopOnSignal, table } from "../reports/reporter.ts";
import { queueRollouts } from "../run/async-rl.ts";
import { launchRun } from "../run/launch.ts";
import type { TrainSummary } from "../run/train.ts";
import { warmStartAndTrain } from "../run/warm-start.ts";
import { RECIPE_OPTIONS, storeLocation } from "./cli.ts";
import { commandRolloutWorker } from "./rollout-worker.ts";
import {
  checkedStoreFor,
  findNewestRun,
  invokedFrom,
  resolveRecipePath,
  runIn,
  timestampId,
} from "./workspace.ts";

/** The command line that continues a run (shown on interrupt, worker failures and stops). */
function resumeCommand(runId: string, recipeArg: string): string {
  const recipe = recipeArg === "default" ? "" : ` --recipe ${recipeArg}`;
  return `npx nx run trainer:train --${recipe} --run ${runId} --resume`;
}

/** Removes every object of a run (a launch that failed before its first step committed). */
async function removeRun(runStore: RunStore): Promise<void> {
  const { store, runId } = runStore;
  for (const { key } of await store.list(`runs/${runId}/`)) await store.delete(key);
  // A folder's deletes leave its empty sub-folders (S3 has none to leave).
  if (store instanceof FileStore) await rm(join(store.root, "runs", runId), { recursive: true, force: true });
}

// What --resume takes besides the run's own recipe: train.steps extends a finished run, and store
// says where the run is (the same run may be reached through another URI), not how it trains.
const RESUME_SETTABLE = ["train.steps", "store"];

/**
 * The recipe a resumed run continues with: its stored config, with the `--set`s --resume takes.
 * One RecipeError line when there is no run to resume or another field is set.
 */
async function resumedRecipe(
  runStore: RunStore | undefined,
  recipe: Recipe,
  overrides: readonly string[],
): Promise<Recipe> {
  if (!runStore) {
    throw new RecipeError(
      `--resume: no run of recipe "${recipe.name}" with a committed step in ${recipe.store}`,
    );
  }
  const other = overrides.find((s) => !RESUME_SETTABLE.includes(s.slice(0, s.indexOf("="))));
  if (other !== undefined) {
    throw new RecipeError(
      `--set ${other}: --resume continues a run with its own recipe; it takes only --set train.steps=<n> (to extend it) and --set store=<uri> (where the run is)`,
    );
  }
  const stored = (await runStore.readConfig()) as Record<string, unknown>;
  return parseRunConfig(applyOverrides(stored, overrides), `run ${runStore.runId} config`);
}

export async function commandTrain(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...RECIPE_OPTIONS,
      run: { type: "string" },
      resume: { type: "boolean", default: false },
      mode: { type: "string" },
      worker: { type: "string" },
      "lease-seconds": { type: "string", default: "60" },
      "idle-seconds": { type: "string", default: "600" },
    },
    strict: true,
  });
  const recipePath = resolveRecipePath(values.recipe);
  let recipe = await loadRecipeFile(recipePath, values.set);
  // The store is checked before it is read; nothing is written before every check (launch.ts).
  const store = await checkedStoreFor(recipe, { write: true });
  let runStore: RunStore | undefined = values.run ? await runIn(store, values.run) : undefined;
  if (values.resume) {
    runStore ??= await findNewestRun(store, recipe);
    recipe = await resumedRecipe(runStore, recipe, values.set);
  }
  // The process's role; the run's config keeps the recipe's own `mode`, so every role writes the same one.
  const mode = values.mode ?? recipe.mode;
  if (mode !== "all" && mode !== "rollout" && mode !== "learner")
    throw new RecipeError(`--mode: expected all, rollout or learner, got "${mode}"`);
  if (mode !== "all" && values.run === undefined)
    throw new RecipeError(`--mode ${mode}: pass --run <id>, the same for the learner and its workers`);
  if (mode === "rollout" && values.worker === undefined)
    throw new RecipeError("--mode rollout: pass --worker <id>, unique per worker process");
  const leaseSeconds = Number(values["lease-seconds"]);
  if (!(leaseSeconds > 0)) throw new RecipeError(`--lease-seconds: expected a positive number`);
  const idleSeconds = Number(values["idle-seconds"]);
  if (!(idleSeconds > 0)) throw new RecipeError(`--idle-seconds: expected a positive number`);
  runStore ??= new RunStore(store, `${recipe.name}-${timestampId()}`);
  const runId = runStore.runId;
  if (mode === "rollout") {
    return commandRolloutWorker({
      recipe,
      runStore,
      workerId: values.worker!,
      leaseMs: leaseSeconds * 1000,
      idleMs: idleSeconds * 1000,
    });
  }
  const committedBefore = await runStore.latestCommittedStep();
  if (!values.resume && committedBefore !== undefined) {
    throw new RecipeError(`run ${runId} already has committed steps: pass --resume to continue it`);
  }
  const resume = resumeCommand(runId, values.recipe);
  const reporter = consoleReporter();
  const signals = stopOnSignal(reporter, resume);
  let summary: TrainSummary;
  try {
    // A resume keeps the run's config; an extension (--resume --set train.steps=n) records the
    // run's new length. A new run's config is written once every check has passed.
    const config = !values.resume ? "write" : values.set.length > 0 ? "replace" : "keep";
    summary = await launchRun({ recipe, runStore, reporter, config }, async (run) => {
      try {
        reporter.note(
          `run ${runId}: ${recipe.environment.name} · team ${run.team.roles.map((r) => `${r.id}→${r.policy}`).join(", ")} · ` +
            `${recipe.strategy.name} · steps 0–${recipe.train.steps - 1} · store ${recipe.store}`,
        );
        return await warmStartAndTrain({
          ...run,
          stopRequested: signals.requested,
          ...(mode === "learner" ? { rollouts: queueRollouts(run) } : {}),
        });
      } finally {
        reporter.finish();
      }
    });
  } catch (error) {
    // A launch that fails before its first step commits leaves nothing behind (with workers, the
    // learner leaves their shards: they may still be writing).
    const committed = await runStore.latestCommittedStep().catch(() => committedBefore);
    if (committed === undefined && mode === "all") await removeRun(runStore).catch(() => {});
    if (
      committed !== undefined &&
      (error instanceof TorchWorkerError || error instanceof TorchWorkerExited)
    ) {
      throw new ResumableError(error.message, resume);
    }
    throw error;
  } finally {
    signals.dispose();
  }
  await printRunSummary(summary, runStore, resume);
  return 0;
}

/** The held-out table, where the run ended and how to go on, its artifacts and its report page. */
async function printRunSummary(summary: TrainSummary, runStore: RunStore, resume: string): Promise<void> {
  const { runId } = runStore;
  const rows = summary.evals.map(({ step, result }) => ({
    step: evalStepLabel(step),
    "held-out success": `${(100 * result.successRate).toFixed(1)}%`,
    "95% CI": interval(result.ci95),
    "team return": result.meanTeamReturn.toFixed(3),
    tasks: result.tasks,
  }));
  const last = summary.lastCommittedStep ?? "-";
  process.stdout.write(
    `\n${table(rows)}\n\nrun ${runId}: ${summary.stoppedEarly ? "stopped" : "finished"} at step ${last}\n`,
  );
  if (summary.stoppedEarly) process.stdout.write(`continue with: ${resume}\n`);
  const where = (key: string) => storeLocation(runStore.store, key, invokedFrom);
  process.stdout.write(
    `artifacts: ${where(`runs/${runId}/`)} (config.json, steps/, checkpoints/, metrics.jsonl)\n`,
  );
  // The run's page (curves, transcripts) next to its artifacts; a failure here loses no training.
  try {
    const { folder } = await writeRunReport(runStore.store, [runId]);
    process.stdout.write(`report: ${where(`${folder}index.html`)}\n`);
  } catch (error) {
    process.stderr.write(
      `note: the run's report was not written: ${(error as Error).message.split("\n")[0]}\n`,
    );
  }
}

/** A failure the run survives (its last committed step stands): the message and how to go on. */
export class ResumableError extends Error {
  constructor(
    message: string,
    readonly resume: string,
  ) {
    super(message);
    this.name = "ResumableError";
  }
}
