/**
 *   nx run trainer:sweep -- --grid <file.yaml> [--seeds 1,2,3] [--recipe <name|path>]
 *                           [--set key=value]... [--id <sweep id>] [--eval-tasks 500]
 * Runs every (point, seed) of the grid (experiments/sweep.ts), then prints the table and writes
 * runs/<sweep id>/{sweep.json, sweep.md, curves.svg, final.svg} to the recipe's store.
 * `--id` of an earlier sweep continues it; SIGINT/SIGTERM commit the step in flight and stop.
 */
import { readFileSync } from "node:fs";
import { basename, dirname, isAbsolute, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { checkStore } from "@troupe/storage";
import { sweep } from "../experiments/sweep.ts";
import { assignments, loadGridText, planSweep } from "../experiments/sweep-grid.ts";
import { writeSweep } from "../experiments/sweep-results.ts";
import { loadRecipeText, RecipeError } from "../recipe.ts";
import { recipeTextWithFiles } from "../recipe-files.ts";
import { consoleReporter, stopOnSignal } from "../reports/reporter.ts";
import { type CliContext, evalTasksOverride, parseSeeds } from "./compare.ts";

export interface SweepCliContext extends CliContext {
  readonly workspaceRoot: string;
  /** A grid file: a path, or a name in apps/trainer/sweeps. */
  resolveGridPath(name: string): string;
}

export async function commandSweep(argv: string[], cli: SweepCliContext): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      grid: { type: "string" },
      recipe: { type: "string" },
      set: { type: "string", multiple: true, default: [] },
      seeds: { type: "string", default: "1,2,3" },
      id: { type: "string" },
      "eval-tasks": { type: "string" },
    },
    strict: true,
  });
  if (values.grid === undefined)
    throw new RecipeError("sweep: pass --grid <file.yaml> (e.g. --grid example)");
  const gridPath = cli.resolveGridPath(values.grid);
  const gridFile = shown(gridPath, cli.workspaceRoot);
  const grid = loadGridText(readFileSync(gridPath, "utf8"), `sweep grid ${gridFile}`);
  const recipePath = values.recipe
    ? cli.resolveRecipePath(values.recipe)
    : gridRecipePath(grid.recipe ?? "default", gridPath, cli);
  // An environment of one's own (or a data file) is loaded once and recorded in the text every point parses.
  const recipeText = await recipeTextWithFiles(readFileSync(recipePath, "utf8"), recipePath);
  const seeds = parseSeeds(values.seeds);
  const evalOverride = evalTasksOverride(values["eval-tasks"], values.set);
  const evalTasks = evalOverride.length
    ? Number(evalOverride[0]!.split("=")[1])
    : loadRecipeText(recipeText, [...assignments(grid.set), ...values.set], recipePath).train.evalTasks;
  const sweepId =
    values.id ??
    `sweep-${basename(gridPath)
      .replace(/\.ya?ml$/, "")
      .replace(/[^A-Za-z0-9_.-]+/g, "-")}-${cli.timestampId()}`;
  const command = commandLine([
    "--grid",
    gridFile,
    "--seeds",
    seeds.join(","),
    ...(values.recipe ? ["--recipe", shown(recipePath, cli.workspaceRoot)] : []),
    ...values.set.flatMap((s) => ["--set", s]),
    "--id",
    sweepId,
    "--eval-tasks",
    String(evalTasks),
  ]);
  const plan = planSweep({
    sweepId,
    command,
    gridFile,
    grid,
    recipeText,
    recipeWhere: shown(recipePath, cli.workspaceRoot),
    cliSets: values.set,
    seeds,
    evalTasks,
  });
  const store = cli.storeFor(plan.base);
  await checkStore(store); // before any work: a StoreError line naming it
  const reporter = consoleReporter();
  const signals = stopOnSignal(reporter);
  reporter.note(
    `sweep ${sweepId}: ${plan.points.length} points × seeds ${seeds.join(", ")} · recipe ${plan.base.name} · ` +
      `${evalTasks} held-out tasks · store ${plan.base.store}`,
  );
  try {
    const outcome = await sweep({ plan, store, reporter, stopRequested: signals.requested });
    reporter.finish();
    if (outcome.results.length > 0) {
      // Also after a stop: the runs finished so far (seed by seed, so every point has its first seeds).
      const written = await writeSweep(store, plan, outcome.results);
      const where = plan.base.store.replace(/\/$/, "");
      process.stdout.write(
        `\n${written.text}\n\nwritten to ${where}/runs/${sweepId}/ (sweep.md, sweep.json, curves.svg, final.svg)\n`,
      );
    }
    if (outcome.stopped) {
      process.stdout.write(`\nsweep ${sweepId} stopped; continue it with\n  ${command}\n`);
      return 130;
    }
    process.stdout.write(`reproduce or continue: ${command}\n`);
    return 0;
  } finally {
    signals.dispose();
  }
}

/** The grid's `recipe:`: a path next to the grid file, else as --recipe takes it. */
function gridRecipePath(name: string, gridPath: string, cli: SweepCliContext): string {
  if (/\.ya?ml$/.test(name) && !isAbsolute(name)) {
    const beside = resolve(dirname(gridPath), name);
    try {
      readFileSync(beside);
      return beside;
    } catch {
      // not next to the grid file: look where --recipe looks
    }
  }
  return cli.resolveRecipePath(name);
}

/** A path as the workspace root sees it (relative when inside it), so the printed command runs there. */
function shown(path: string, workspaceRoot: string): string {
  const rel = relative(workspaceRoot, path);
  return rel && !rel.startsWith("..") && !isAbsolute(rel) ? rel : path;
}

/** The sweep command line, shell-quoted. */
export function commandLine(args: readonly string[]): string {
  const quote = (a: string) => (/^[A-Za-z0-9_./:=,@+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);
  return ["npx nx run trainer:sweep --", ...args.map(quote)].join(" ");
}
