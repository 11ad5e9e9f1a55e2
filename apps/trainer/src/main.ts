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
import { openStore, RunStore } from "@troupe/storage";
import { createEngine } from "./engines.ts";
import { createEnvironment } from "./envs.ts";
import { loadRecipeText, parseRecipe, type Recipe, RecipeError } from "./recipe.ts";
import { consoleReporter, table } from "./reporter.ts";
import { train } from "./train.ts";
import { warmStart } from "./warm-start.ts";

const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const workspaceRoot = resolve(appRoot, "../..");
const invokedFrom = process.env.INIT_CWD ?? process.cwd();

const USAGE = `usage: trainer train [--recipe <name|path>] [--set key=value]... [--run <id>] [--resume]
  --recipe  a recipe name from apps/trainer/recipes (default: "default") or a YAML path
  --set     override a recipe field, e.g. --set train.steps=20 --set strategy.candidates=8
  --run     run id (default: <recipe name>-<UTC timestamp>)
  --resume  continue a run from its newest committed step (the newest run of the recipe without --run)`;

export function resolveRecipePath(name: string): string {
  const candidates = [
    resolve(invokedFrom, name),
    join(appRoot, "recipes", `${name}.yaml`),
    join(appRoot, "recipes", name),
  ];
  const found = candidates.find((p) => existsSync(p) && p.match(/\.ya?ml$/));
  if (!found) throw new RecipeError(`recipe "${name}" not found (looked at ${candidates.join(", ")})`);
  return found;
}

function storeFor(recipe: Recipe) {
  return openStore(recipe.store, { cwd: workspaceRoot });
}

async function newestRunOf(recipe: Recipe): Promise<string | undefined> {
  const store = storeFor(recipe);
  const ids = (await store.list("runs/"))
    .map((o) => /^runs\/([^/]+)\/config\.json$/.exec(o.key)?.[1])
    .filter((id): id is string => id !== undefined && id.startsWith(`${recipe.name}-`))
    .sort();
  return ids.at(-1);
}

function timestampId(): string {
  return new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")
    .replace("T", "-");
}

async function commandTrain(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      recipe: { type: "string", default: "default" },
      set: { type: "string", multiple: true, default: [] },
      run: { type: "string" },
      resume: { type: "boolean", default: false },
    },
    strict: true,
  });
  const recipePath = resolveRecipePath(values.recipe);
  let recipe = loadRecipeText(readFileSync(recipePath, "utf8"), values.set, recipePath);
  let runId = values.run;
  if (values.resume) {
    runId ??= await newestRunOf(recipe);
    if (!runId) throw new RecipeError(`--resume: no run of recipe "${recipe.name}" in ${recipe.store}`);
    const stored = parseRecipe(
      await new RunStore(storeFor(recipe), runId).readConfig(),
      `run ${runId} config`,
    );
    if (values.set.length > 0)
      throw new RecipeError("--resume continues a run with its own recipe: drop --set");
    recipe = stored;
  }
  runId ??= `${recipe.name}-${timestampId()}`;
  const runStore = new RunStore(storeFor(recipe), runId);
  if (!values.resume && (await runStore.latestCommittedStep()) !== undefined) {
    throw new RecipeError(`run ${runId} already has committed steps: pass --resume to continue it`);
  }
  await runStore.writeConfig(recipe);

  const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
  const team = trainerEnv.team(recipe.team.specialisation);
  const fullTeam = {
    ...team,
    maxTurns: recipe.team.maxTurns ?? team.maxTurns,
    turnOrder: recipe.team.turnOrder ?? team.turnOrder,
  };
  const engine = await createEngine(recipe, teamPolicies(fullTeam));
  const reporter = consoleReporter();
  let stop = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop) process.exit(130); // second signal: leave now; the uncommitted step is redone on resume
    stop = true;
    reporter.note(`${signal}: finishing and committing the current step (again to abort)`);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  reporter.note(
    `run ${runId}: ${recipe.environment.name} · team ${fullTeam.roles.map((r) => `${r.id}→${r.policy}`).join(", ")} · ` +
      `${recipe.strategy.name} · ${recipe.train.steps} steps · store ${recipe.store}`,
  );
  if ((await runStore.latestCommittedStep()) === undefined) {
    await warmStart(recipe, trainerEnv, fullTeam, engine, storeFor(recipe), reporter);
  }
  const summary = await train({
    recipe,
    trainerEnv,
    team: fullTeam,
    engine,
    runStore,
    reporter,
    stopRequested: () => stop,
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
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "train":
        return await commandTrain(rest);
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
    if (error instanceof RecipeError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      process.stderr.write(`error: ${(error as Error).message}\n`);
      return 2;
    }
    throw error;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
