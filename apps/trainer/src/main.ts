/**
 * The trainer's command line.
 *
 *   nx run trainer:train [-- --recipe <name|file>] [--set key=value ...] [--run <id>] [--resume]
 *
 * Recipes are YAML files in apps/trainer/recipes (pass a name) or anywhere (pass a path).
 * Relative `file://` stores are relative to the workspace root, so runs land in ./.troupe/runs
 * wherever the command is started from.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { teamPolicies } from "@troupe/core";
import { TorchWorkerError, TorchWorkerExited } from "@troupe/engine-torch";
import {
  checkStore,
  IntegrityError,
  listFolders,
  ObjectNotFoundError,
  openStore,
  RetriesExhaustedError,
  RunStore,
  StoreError,
} from "@troupe/storage";
import { queueRollouts, runRolloutWorker } from "./async-rl.ts";
import { commandCompare } from "./compare-command.ts";
import { checkEngineRecipe, createEngine } from "./engines.ts";
import { recipeEnvironment } from "./envs.ts";
import { evalSampling, evaluate } from "./evaluate.ts";
import { commandPublish } from "./publish.ts";
import { loadRecipeText, parseRecipe, type Recipe, RecipeError } from "./recipe.ts";
import { writeRunReport } from "./report.ts";
import { commandReport } from "./report-command.ts";
import { consoleReporter, stopOnSignal, table } from "./reporter.ts";
import { commandSweep } from "./sweep-command.ts";
import { evalTasks, policySet, restoreStep, train } from "./train.ts";
import { warmStart } from "./warm-start.ts";

const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const workspaceRoot = resolve(appRoot, "../..");
const invokedFrom = process.env.INIT_CWD ?? process.cwd();

const USAGE = `usage: trainer train [--recipe <name|path>] [--set key=value]... [--run <id>] [--resume] [--mode m] [--worker id]
       trainer sft   [--recipe <name|path>] [--set key=value]...
       trainer eval  [--recipe <name|path>] [--run <id>] [--step <n>] [--tasks <n>]
       trainer compare [--recipe <name|path>] [--set key=value]... [--seeds 1,2,3] [--arms a,b] [--id <id>] [--eval-tasks 500]
       trainer sweep --grid <name|file.yaml> [--seeds 1,2,3] [--recipe <name|path>] [--set key=value]... [--id <id>] [--eval-tasks 500]
       trainer report --run <id>[,<id>…] [--recipe <name|path>] [--store <uri>] [--out <dir>]
       trainer publish --run <id> --name <team> [--step <n>] [--alias <a>] [--recipe <name|path>] [--store <uri>] [--no-eval]
  --recipe  a recipe name from apps/trainer/recipes (default: "default") or a YAML path
  --set     override a recipe field, e.g. --set train.steps=20 --set strategy.candidates=8
  --run     run id (default: <recipe name>-<UTC timestamp>)
  --resume  continue a run from its newest committed step (the newest run of the recipe without --run)
  --mode    all (default: the recipe's mode) | learner | rollout: asynchronous RL through the store;
            the learner and its rollout workers share --run, each worker has its own --worker <id>
  --lease-seconds  a rollout worker's hold on a task before another worker may take it over (60)
  --idle-seconds   a rollout worker exits with an error after this long with nothing to sample and
                   no new committed step, e.g. when the learner died (600)
  --grid    a sweep's grid file: a name from apps/trainer/sweeps or a YAML path (docs/training.md, "Sweeps")
  --id      a compare's or sweep's id: the same id continues it, reading finished runs back
  --eval-tasks  held-out tasks each compare or sweep run is evaluated on (default 500; sweeps: greedy)`;

export function resolveRecipePath(name: string): string {
  return resolveYaml("recipe", name, "recipes");
}

/** A sweep grid: a YAML path, or a name in apps/trainer/sweeps. */
export function resolveGridPath(name: string): string {
  return resolveYaml("grid", name, "sweeps");
}

function resolveYaml(what: string, name: string, folder: string): string {
  const candidates = [
    resolve(invokedFrom, name),
    join(appRoot, folder, `${name}.yaml`),
    join(appRoot, folder, name),
  ];
  const found = candidates.find((p) => existsSync(p) && p.match(/\.ya?ml$/));
  if (!found) throw new RecipeError(`${what} "${name}" not found (looked at ${candidates.join(", ")})`);
  return found;
}

function storeFor(recipe: Recipe) {
  return openStore(recipe.store, { cwd: workspaceRoot });
}

/**
 * The recipe's store, checked before any work (a folder that exists or can be made, writable, not
 * under /proc or /sys, not a file; S3 credentials and a probe): a StoreError line naming it, else.
 */
async function checkedStoreFor(recipe: Recipe, options: { write: boolean }) {
  const store = storeFor(recipe);
  await checkStore(store, options);
  return store;
}

/** The newest run of a recipe: one delimiter listing of runs/ (one entry per run), newest id first. */
async function newestRunOf(recipe: Recipe): Promise<string | undefined> {
  const store = storeFor(recipe);
  const ids = (await listFolders(store, "runs/"))
    .map((folder) => folder.slice("runs/".length, -1))
    .filter((id) => id.startsWith(`${recipe.name}-`))
    .sort()
    .reverse();
  for (const id of ids) if (await store.head(`runs/${id}/config.json`)) return id;
  return undefined;
}

function timestampId(): string {
  return new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")
    .replace("T", "-");
}

/** `sft`: only the supervised warm start of a recipe (cached in the store, resumable). */
async function commandSft(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      recipe: { type: "string", default: "default" },
      set: { type: "string", multiple: true, default: [] },
    },
    strict: true,
  });
  const recipe = loadRecipeText(readFileSync(resolveRecipePath(values.recipe), "utf8"), values.set);
  if (!recipe.sft || recipe.sft.steps === 0)
    throw new RecipeError("recipe has no sft section (or sft.steps is 0)");
  const { trainerEnv, team } = recipeEnvironment(recipe);
  checkEngineRecipe(recipe, teamPolicies(team));
  const store = await checkedStoreFor(recipe, { write: true });
  const engine = await createEngine(recipe, teamPolicies(team));
  const reporter = consoleReporter();
  const result = await warmStart(recipe, trainerEnv, team, engine, store, reporter);
  const evalResult = await evaluate(
    trainerEnv,
    team,
    policySet(engine, team, 0),
    evalTasks(trainerEnv, recipe),
    evalSampling(recipe),
    recipe.seed,
  );
  reporter.eval(0, evalResult);
  reporter.finish();
  await engine.close();
  process.stdout.write(
    `warm start ${result!.runId}${result!.cached ? " (cached)" : ""} in ${recipe.store}\n`,
  );
  return 0;
}

/** `eval`: held-out success of a run's checkpoints at a step (default: the newest committed). */
async function commandEval(argv: string[]): Promise<number> {
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
  const base = loadRecipeText(readFileSync(resolveRecipePath(values.recipe), "utf8"));
  const store = await checkedStoreFor(base, { write: false });
  const runId = values.run ?? (await newestRunOf(base));
  if (!runId) throw new RecipeError(`eval: no run of recipe "${base.name}" in ${base.store}; pass --run`);
  const runStore = new RunStore(store, runId);
  const recipe = parseRecipe(await runStore.readConfig(), `run ${runId} config`);
  const step = values.step !== undefined ? Number(values.step) : await runStore.latestCommittedStep();
  if (step === undefined || !Number.isInteger(step) || step < 0) {
    throw new RecipeError(`eval: run ${runId} has no committed step${values.step ? ` ${values.step}` : ""}`);
  }
  const { trainerEnv, team } = recipeEnvironment(recipe);
  // Every object of the run up to the step, shards included, against its manifest (errors name the key).
  await runStore.verify({ upToStep: step });
  const engine = await createEngine(recipe, teamPolicies(team));
  await restoreStep(engine, runStore, team, step);
  const count = values.tasks !== undefined ? Number(values.tasks) : recipe.train.evalTasks;
  const result = await evaluate(
    trainerEnv,
    team,
    policySet(engine, team, step + 1),
    evalTasks(trainerEnv, recipe, count),
    evalSampling(recipe),
    recipe.seed,
  );
  await engine.close();
  process.stdout.write(
    `${table([
      {
        run: runId,
        step,
        "held-out success": `${(100 * result.successRate).toFixed(1)}%`,
        "95% CI": `[${(100 * result.ci95[0]).toFixed(1)}, ${(100 * result.ci95[1]).toFixed(1)}]`,
        "team return": result.meanTeamReturn.toFixed(3),
        tasks: result.tasks,
      },
    ])}\n`,
  );
  return 0;
}

async function commandTrain(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      recipe: { type: "string", default: "default" },
      set: { type: "string", multiple: true, default: [] },
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
  let recipe = loadRecipeText(readFileSync(recipePath, "utf8"), values.set, recipePath);
  // Nothing is written before the recipe, its environment and engine, and the store have passed.
  const store = await checkedStoreFor(recipe, { write: true });
  let runId = values.run;
  if (values.resume) {
    runId ??= await newestRunOf(recipe);
    if (!runId) throw new RecipeError(`--resume: no run of recipe "${recipe.name}" in ${recipe.store}`);
    const stored = parseRecipe(await new RunStore(store, runId).readConfig(), `run ${runId} config`);
    if (values.set.length > 0)
      throw new RecipeError("--resume continues a run with its own recipe: drop --set");
    recipe = stored;
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
  runId ??= `${recipe.name}-${timestampId()}`;
  const runStore = new RunStore(store, runId);
  const idleSeconds = Number(values["idle-seconds"]);
  if (!(idleSeconds > 0)) throw new RecipeError(`--idle-seconds: expected a positive number`);
  const { trainerEnv, team: fullTeam } = recipeEnvironment(recipe);
  checkEngineRecipe(recipe, teamPolicies(fullTeam));
  if (mode === "rollout")
    return runRolloutWorker(recipe, runStore, values.worker!, leaseSeconds * 1000, idleSeconds * 1000);
  if (!values.resume && (await runStore.latestCommittedStep()) !== undefined) {
    throw new RecipeError(`run ${runId} already has committed steps: pass --resume to continue it`);
  }
  await runStore.writeConfig(recipe);

  const engine = await createEngine(recipe, teamPolicies(fullTeam));
  const reporter = consoleReporter();
  const signals = stopOnSignal(reporter);
  reporter.note(
    `run ${runId}: ${recipe.environment.name} · team ${fullTeam.roles.map((r) => `${r.id}→${r.policy}`).join(", ")} · ` +
      `${recipe.strategy.name} · ${recipe.train.steps} steps · store ${recipe.store}`,
  );
  if ((await runStore.latestCommittedStep()) === undefined) {
    await warmStart(recipe, trainerEnv, fullTeam, engine, store, reporter);
  }
  const summary = await train({
    recipe,
    trainerEnv,
    team: fullTeam,
    engine,
    runStore,
    reporter,
    stopRequested: signals.requested,
    ...(mode === "learner" ? { rollouts: queueRollouts({ recipe, trainerEnv, runStore, reporter }) } : {}),
  });
  reporter.finish();
  await engine.close();
  const rows = summary.evals.map(({ step, result }) => ({
    step,
    "held-out success": `${(100 * result.successRate).toFixed(1)}%`,
    "95% CI": `[${(100 * result.ci95[0]).toFixed(1)}, ${(100 * result.ci95[1]).toFixed(1)}]`,
    "team return": result.meanTeamReturn.toFixed(3),
    tasks: result.tasks,
  }));
  process.stdout.write(
    `\n${table(rows)}\n\nrun ${runId}: ${summary.stoppedEarly ? "stopped" : "finished"} at step ${summary.lastCommittedStep ?? "-"}\n`,
  );
  process.stdout.write(
    `artifacts: ${recipe.store.replace(/\/$/, "")}/runs/${runId}/ (config.json, steps/, checkpoints/, metrics.jsonl)\n`.replace(
      "/runs/runs/",
      "/runs/",
    ),
  );
  // The run's page (curves, transcripts) next to its artifacts; a failure here loses no training.
  try {
    const { folder } = await writeRunReport(runStore.store, [runId]);
    process.stdout.write(`report: ${runStore.store.uri.replace(/\/$/, "")}/${folder}index.html\n`);
  } catch (error) {
    process.stderr.write(
      `note: the run's report was not written: ${(error as Error).message.split("\n")[0]}\n`,
    );
  }
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "train":
        return await commandTrain(rest);
      case "sft":
        return await commandSft(rest);
      case "eval":
        return await commandEval(rest);
      case "compare":
        return await commandCompare(rest, { resolveRecipePath, storeFor, timestampId });
      case "sweep":
        return await commandSweep(rest, {
          resolveRecipePath,
          resolveGridPath,
          storeFor,
          timestampId,
          workspaceRoot,
        });
      case "publish":
        return await commandPublish(rest, { workspaceRoot, resolveRecipePath });
      case "report":
        return await commandReport(rest, { workspaceRoot, resolveRecipePath });
      case undefined:
      case "help":
      case "--help":
        process.stdout.write(`${USAGE}\n`);
        return command === undefined ? 2 : 0;
      default:
        process.stderr.write(`unknown command "${command}"\n${USAGE}\n`);
        return 2;
    }
  } catch (error) {
    if (
      error instanceof RecipeError ||
      error instanceof StoreError ||
      error instanceof ObjectNotFoundError ||
      error instanceof IntegrityError ||
      error instanceof RetriesExhaustedError ||
      (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      process.stderr.write(`error: ${(error as Error).message}\n`);
      return 2;
    }
    if (error instanceof TorchWorkerExited || error instanceof TorchWorkerError) {
      // The step in flight was not committed; the run continues from its last committed step.
      process.stderr.write(`error: ${error.message}\ncontinue with --resume\n`);
      return 1;
    }
    throw error;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
