/**
 * The trainer's command line.
 *
 *   nx run trainer:train [-- --recipe <name|file>] [--set key=value ...] [--run <id>] [--resume]
 *
 * Recipes are YAML files in apps/trainer/recipes (pass a name) or anywhere (pass a path).
 * Relative `file://` stores are relative to the workspace root, so runs land in
 * ./.troupe/runs/<id>/ wherever the command is started from. `<command> --help` prints one
 * command's usage; a user error is one `error:` line (set TROUPE_DEBUG=1 for the stack of an
 * unexpected one).
 */
import { existsSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { teamPolicies } from "@troupe/core";
import { MemoryBudgetError } from "@troupe/engine-onnx";
import { TorchWorkerError, TorchWorkerExited } from "@troupe/engine-torch";
import {
  checkStore,
  FileStore,
  IntegrityError,
  listFolders,
  ObjectNotFoundError,
  type ObjectStore,
  openStore,
  RetriesExhaustedError,
  RunStore,
  StoreError,
} from "@troupe/storage/node";
import { queueRollouts, runRolloutWorker } from "./async-rl.ts";
import { checkSetKeys, errorLine, setArguments, storeLocation, wantsHelp } from "./cli.ts";
import { commandCompare } from "./compare-command.ts";
import { checkEngineRecipe, createEngine } from "./engines.ts";
import { recipeEnvironment } from "./envs.ts";
import { evalSampling, evaluate } from "./evaluate.ts";
import { commandPublish } from "./publish.ts";
import { applyOverrides, loadRecipeText, parseRecipe, type Recipe, RecipeError } from "./recipe.ts";
import { writeRunReport } from "./report.ts";
import { commandReport } from "./report-command.ts";
import { consoleReporter, evalStepLabel, interval, stopOnSignal, table } from "./reporter.ts";
import { commandSweep } from "./sweep-command.ts";
import { checkpointedStep, evalTasks, policySet, restoreStep, type TrainSummary } from "./train.ts";
import { warmStart, warmStartAndTrain } from "./warm-start.ts";

const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const workspaceRoot = resolve(appRoot, "../..");
const invokedFrom = process.env.INIT_CWD ?? process.cwd();

const RECIPE_FLAGS = `  --recipe  a recipe name from apps/trainer/recipes (default: "default") or a YAML path
  --set     override a recipe field, e.g. --set train.steps=20 --set strategy.candidates=8`;

/** Each command's usage: `<command> --help` prints its own, `help` all of them. */
const USAGES: Record<string, string> = {
  train: `usage: trainer train [--recipe <name|path>] [--set key=value]... [--run <id>] [--resume] [--mode m] [--worker id]
${RECIPE_FLAGS}
  --run     run id (default: <recipe name>-<UTC timestamp>); the run is in <store>/runs/<id>/
  --resume  continue a run from its newest committed step (the newest run of the recipe without
            --run); with --set train.steps=<n> a finished run goes on to n steps;
            --set store=<uri> says where the run is (no other field is taken)
  --mode    all (default: the recipe's mode) | learner | rollout: asynchronous RL through the store;
            the learner and its rollout workers share --run, each worker has its own --worker <id>
  --lease-seconds  a rollout worker's hold on a task before another worker may take it over (60)
  --idle-seconds   a rollout worker exits with an error after this long with nothing to sample and
                   no new committed step, e.g. when the learner died (600)
Steps are numbered from 0, as in metrics.jsonl, eval --step and publish --step.`,
  sft: `usage: trainer sft [--recipe <name|path>] [--set key=value]...
  only the recipe's supervised warm start (cached in the store, resumable), then one evaluation
${RECIPE_FLAGS}`,
  eval: `usage: trainer eval [--recipe <name|path>] [--run <id>] [--step <n>] [--tasks <n>]
  held-out success of a run's checkpoints
  --recipe  the recipe whose store holds the run (and whose newest run is the default)
  --run     run id (default: the newest run of the recipe with a committed step)
  --step    a committed step with checkpoints (default: the newest committed step)
  --tasks   held-out tasks (default: the run's train.evalTasks)`,
  compare: `usage: trainer compare [--recipe <name|path>] [--set key=value]... [--seeds 1,2,3] [--arms a,b] [--id <id>] [--eval-tasks 500] [--finished]
${RECIPE_FLAGS}
  --seeds       seeds of every arm (default 1,2,3)
  --arms        the arms to run (default: all)
  --id          the compare's id: the same id continues it, reading finished runs back
  --eval-tasks  held-out tasks each run is evaluated on (default 500)
  --finished    run nothing: tabulate the arms × seeds of --id that have finished`,
  sweep: `usage: trainer sweep --grid <name|file.yaml> [--seeds 1,2,3] [--recipe <name|path>] [--set key=value]... [--id <id>] [--eval-tasks 500]
  --grid        a sweep's grid file: a name from apps/trainer/sweeps or a YAML path (docs/training.md, "Sweeps")
${RECIPE_FLAGS}
  --seeds       seeds of every point
  --id          the sweep's id: the same id continues it, reading finished runs back
  --eval-tasks  held-out tasks each run is evaluated on (default 500, greedy)`,
  report: `usage: trainer report --run <id>[,<id>…] [--recipe <name|path>] [--store <uri>] [--out <dir>]
  the HTML page of runs (or a compare's or sweep's id) and its charts as SVG files
  --store   where the runs are (default: the recipe's store)
  --out     also copy the page to this folder`,
  publish: `usage: trainer publish --run <id> --name <team> [--step <n>] [--alias <a>] [--recipe <name|path>] [--store <uri>] [--tasks <n>] [--no-eval]
  a run's checkpoints at one step → a published team version in the same store
  --step    a committed step with checkpoints (default: the newest)
  --alias   also point <team>@<alias> at the new version
  --store   where the run is (default: the recipe's store)
  --no-eval publish without an evaluation when the step recorded none`,
};
const USAGE = Object.values(USAGES)
  .map((u) => u.split("\n")[0]!.replace(/^usage: /, "       "))
  .join("\n")
  .replace(/^ {7}/, "usage: ")
  .concat("\n  trainer <command> --help describes one command");

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

/**
 * The newest run of a recipe: one delimiter listing of runs/ (one entry per run), newest id
 * first. A folder is a run once its first step committed: a launch that failed before that (or
 * was killed) is never picked.
 */
async function newestRunOf(store: ObjectStore, recipe: Recipe): Promise<string | undefined> {
  const ids = (await listFolders(store, "runs/"))
    .map((folder) => folder.slice("runs/".length, -1))
    .filter((id) => id.startsWith(`${recipe.name}-`))
    .sort()
    .reverse();
  for (const id of ids) if ((await new RunStore(store, id).latestCommittedStep()) !== undefined) return id;
  return undefined;
}

/**
 * Where a run is: the store's runs/<id>/, or — for a local store — the layout before it,
 * runs/runs/<id>/ (when `.troupe/runs` was the store), read as a store of its own.
 */
async function runIn(store: ObjectStore, runId: string): Promise<RunStore> {
  const here = new RunStore(store, runId);
  if (!(store instanceof FileStore) || (await store.head(`runs/${runId}/config.json`))) return here;
  const legacy = new FileStore(`${store.root}/runs`);
  return (await legacy.head(`runs/${runId}/config.json`)) ? new RunStore(legacy, runId) : here;
}

/** The newest run of a recipe in the store, else in the older local layout (see runIn). */
async function findNewestRun(store: ObjectStore, recipe: Recipe): Promise<RunStore | undefined> {
  const id = await newestRunOf(store, recipe);
  if (id !== undefined) return new RunStore(store, id);
  if (!(store instanceof FileStore)) return undefined;
  const legacy = new FileStore(`${store.root}/runs`);
  const old = await newestRunOf(legacy, recipe);
  return old === undefined ? undefined : new RunStore(legacy, old);
}

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
    `warm start ${result!.runId}${result!.cached ? " (cached)" : ""}: ${storeLocation(store, `runs/${result!.runId}/`, invokedFrom)}\n`,
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
  const requestedStep = wholeNumber("--step", values.step, 0);
  const count = wholeNumber("--tasks", values.tasks, 1);
  const base = loadRecipeText(readFileSync(resolveRecipePath(values.recipe), "utf8"));
  const store = await checkedStoreFor(base, { write: false });
  const runStore = values.run ? await runIn(store, values.run) : await findNewestRun(store, base);
  if (!runStore) {
    throw new RecipeError(
      `eval: no run of recipe "${base.name}" with a committed step in ${base.store}; pass --run`,
    );
  }
  const runId = runStore.runId;
  const recipe = parseRecipe(await runStore.readConfig(), `run ${runId} config`);
  const { trainerEnv, team } = recipeEnvironment(recipe);
  const step = await checkpointedStep(runStore, team, requestedStep, "--step");
  const engine = await createEngine(recipe, teamPolicies(team));
  await restoreStep(engine, runStore, team, step);
  const result = await evaluate(
    trainerEnv,
    team,
    policySet(engine, team, step + 1),
    evalTasks(trainerEnv, recipe, count ?? recipe.train.evalTasks),
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

/** `--resume` takes one recipe change: train.steps, to extend a run (finished or not). */
// What --resume takes besides the run's own recipe: train.steps extends a finished run, and store
// says where the run is (the same run may be reached through another URI), not how it trains.
const RESUME_SETTABLE = ["train.steps", "store"];

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
  let runStore: RunStore | undefined = values.run ? await runIn(store, values.run) : undefined;
  if (values.resume) {
    runStore ??= await findNewestRun(store, recipe);
    if (!runStore) {
      throw new RecipeError(
        `--resume: no run of recipe "${recipe.name}" with a committed step in ${recipe.store}`,
      );
    }
    const other = values.set.find((s) => !RESUME_SETTABLE.includes(s.slice(0, s.indexOf("="))));
    if (other !== undefined) {
      throw new RecipeError(
        `--set ${other}: --resume continues a run with its own recipe; it takes only --set train.steps=<n> (to extend it) and --set store=<uri> (where the run is)`,
      );
    }
    const stored = (await runStore.readConfig()) as Record<string, unknown>;
    recipe = parseRecipe(applyOverrides(stored, values.set), `run ${runStore.runId} config`);
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
  const { trainerEnv, team: fullTeam } = recipeEnvironment(recipe);
  checkEngineRecipe(recipe, teamPolicies(fullTeam));
  if (mode === "rollout")
    return runRolloutWorker(recipe, runStore, values.worker!, leaseSeconds * 1000, idleSeconds * 1000);
  const committedBefore = await runStore.latestCommittedStep();
  if (!values.resume && committedBefore !== undefined) {
    throw new RecipeError(`run ${runId} already has committed steps: pass --resume to continue it`);
  }
  const resume = resumeCommand(runId, values.recipe);
  const reporter = consoleReporter();
  const signals = stopOnSignal(reporter, resume);
  let summary: TrainSummary;
  try {
    // An extension (--resume --set train.steps=n) records the run's new length; else the config is
    // written once, and a different one for an existing run is refused.
    if (values.resume && values.set.length > 0) await runStore.replaceConfig(recipe);
    else await runStore.writeConfig(recipe);
    const engine = await createEngine(recipe, teamPolicies(fullTeam));
    try {
      reporter.note(
        `run ${runId}: ${recipe.environment.name} · team ${fullTeam.roles.map((r) => `${r.id}→${r.policy}`).join(", ")} · ` +
          `${recipe.strategy.name} · steps 0–${recipe.train.steps - 1} · store ${recipe.store}`,
      );
      summary = await warmStartAndTrain({
        recipe,
        trainerEnv,
        team: fullTeam,
        engine,
        runStore,
        reporter,
        stopRequested: signals.requested,
        ...(mode === "learner"
          ? { rollouts: queueRollouts({ recipe, trainerEnv, runStore, reporter }) }
          : {}),
      });
    } finally {
      reporter.finish();
      await engine.close();
    }
  } catch (error) {
    // A launch that fails before its first step commits leaves nothing behind (with workers, the
    // learner leaves their shards: they may still be writing).
    const committed = await runStore.latestCommittedStep().catch(() => committedBefore);
    if (committed === undefined && mode === "all") await removeRun(runStore).catch(() => {});
    if (
      committed !== undefined &&
      (error instanceof TorchWorkerExited || error instanceof TorchWorkerError)
    ) {
      throw new ResumableError(error.message, resume);
    }
    throw error;
  } finally {
    signals.dispose();
  }
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
  return 0;
}

/** A failure the run survives (its last committed step stands): the message and how to go on. */
class ResumableError extends Error {
  constructor(
    message: string,
    readonly resume: string,
  ) {
    super(message);
    this.name = "ResumableError";
  }
}

/** Errors that are the user's to fix (a flag, a recipe, a store, a run): one line, exit 2. */
function isUserError(error: unknown): boolean {
  return (
    error instanceof RecipeError ||
    error instanceof StoreError ||
    error instanceof ObjectNotFoundError ||
    error instanceof IntegrityError ||
    error instanceof RetriesExhaustedError ||
    error instanceof MemoryBudgetError ||
    ((error as { code?: string })?.code?.startsWith("ERR_PARSE_ARGS") ?? false)
  );
}

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  train: commandTrain,
  sft: commandSft,
  eval: commandEval,
  compare: (argv) => commandCompare(argv, { resolveRecipePath, storeFor, timestampId }),
  sweep: (argv) =>
    commandSweep(argv, { resolveRecipePath, resolveGridPath, storeFor, timestampId, workspaceRoot }),
  publish: (argv) => commandPublish(argv, { workspaceRoot, resolveRecipePath, invokedFrom }),
  report: (argv) => commandReport(argv, { workspaceRoot, resolveRecipePath }),
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    process.stderr.write(
      `error: unknown command "${command}" (commands: ${Object.keys(COMMANDS).join(", ")})\n`,
    );
    return 2;
  }
  if (wantsHelp(rest)) {
    process.stdout.write(`${USAGES[command]}\n`);
    return 0;
  }
  try {
    // Every command's --set keys, before any file is read: a typo names the flag, not the recipe.
    checkSetKeys(setArguments(rest));
    return await run(rest);
  } catch (error) {
    process.stderr.write(`${errorLine(error)}\n`);
    if (error instanceof ResumableError) {
      // The step in flight was not committed; the run continues from its last committed step.
      process.stderr.write(`continue with: ${error.resume}\n`);
      return 1;
    }
    if (isUserError(error)) return 2;
    if (process.env.TROUPE_DEBUG) process.stderr.write(`${(error as Error).stack}\n`);
    return 1;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
