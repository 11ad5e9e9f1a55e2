import { parseArgs } from "node:util";
import { checkStore, type ObjectStore } from "@troupe/storage";
import { compare } from "../experiments/compare.ts";
import { ARMS, type Arm, DEFAULT_ARMS } from "../experiments/compare-arms.ts";
import { writeComparison } from "../experiments/compare-results.ts";
import { type Recipe, RecipeError } from "../recipe.ts";
import { loadRecipeFile } from "../recipe-files.ts";
import { consoleReporter } from "../reports/reporter.ts";
import { RECIPE_OPTIONS } from "./cli.ts";

export interface CliContext {
  resolveRecipePath(name: string): string;
  storeFor(recipe: Recipe): ObjectStore;
  timestampId(): string;
}

export async function commandCompare(argv: string[], cli: CliContext): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...RECIPE_OPTIONS,
      seeds: { type: "string", default: "1,2,3" },
      arms: { type: "string", default: DEFAULT_ARMS.join(",") },
      samples: { type: "string" },
      id: { type: "string" },
      "eval-tasks": { type: "string" },
      finished: { type: "boolean", default: false },
    },
    strict: true,
  });
  const recipePath = cli.resolveRecipePath(values.recipe);
  const evalTasks = evalTasksOverride(values["eval-tasks"], values.set);
  const base = await loadRecipeFile(recipePath, [...values.set, ...evalTasks]);
  const seeds = parseSeeds(values.seeds);
  const arms = values.arms.split(",").map((a) => {
    const arm = a.trim() as Arm;
    if (!ARMS.includes(arm)) throw new RecipeError(`--arms: unknown arm "${a}" (known: ${ARMS.join(", ")})`);
    return arm;
  });
  const samples = parseSamples(values.samples, base);
  if (values.finished && values.id === undefined)
    throw new RecipeError("--finished: name the compare to tabulate with --id");
  const compareId = values.id ?? `compare-${base.name}-${cli.timestampId()}`;
  const store = cli.storeFor(base);
  await checkStore(store); // before any work: a StoreError line naming it
  const reporter = consoleReporter();
  reporter.note(
    `compare ${compareId}: arms ${arms.join(", ")} · seeds ${seeds.join(", ")} · ${base.train.steps} RL steps each · store ${base.store}`,
  );
  const results = await compare({
    base,
    store,
    compareId,
    arms,
    seeds,
    reporter,
    samples,
    finishedOnly: values.finished,
  });
  reporter.finish();
  if (results.length === 0)
    throw new RecipeError(`compare ${compareId}: none of these arms × seeds has finished`);
  const written = await writeComparison(store, compareId, base, results);
  process.stdout.write(
    `\n${written.text}\n\nwritten to ${base.store.replace(/\/$/, "")}/${written.markdown} ` +
      "(and compare.json, curves.svg, final.svg)\n",
  );
  return 0;
}

/**
 * `--samples n`: episodes per held-out task at temperature 1 after each run, for pass@k (k = 1, 3,
 * 5, 10 up to n). Default: 10 for coding (the papers report pass@k there), else 0 (none).
 */
export function parseSamples(flag: string | undefined, base: Recipe): number {
  if (flag === undefined) return base.environment.name === "coding" ? 10 : 0;
  const n = Number(flag);
  if (!Number.isInteger(n) || n < 0)
    throw new RecipeError(`--samples: "${flag}" is not a non-negative integer`);
  return n;
}

/** `--seeds 1,2,3`: distinct non-negative integers. */
export function parseSeeds(text: string): number[] {
  const seeds = text.split(",").map((s) => {
    const n = Number(s.trim());
    if (s.trim() === "" || !Number.isInteger(n) || n < 0) {
      throw new RecipeError(`--seeds: "${s}" is not a non-negative integer`);
    }
    return n;
  });
  if (new Set(seeds).size !== seeds.length) throw new RecipeError(`--seeds: "${text}" repeats a seed`);
  return seeds;
}

/** Held-out tasks of compare and sweep runs unless the command line says otherwise. */
export const DEFAULT_EVAL_TASKS = 500;

/**
 * The `train.evalTasks` assignment `--eval-tasks` stands for: its value, else the default (500) —
 * unless a `--set train.evalTasks=…` already sets it (giving both is an error).
 */
export function evalTasksOverride(flag: string | undefined, sets: readonly string[]): string[] {
  const setByUser = sets.some((s) => s.slice(0, s.indexOf("=")).trim() === "train.evalTasks");
  if (flag === undefined) return setByUser ? [] : [`train.evalTasks=${DEFAULT_EVAL_TASKS}`];
  if (setByUser) throw new RecipeError("give the held-out tasks once: --eval-tasks or --set train.evalTasks");
  const n = Number(flag);
  if (!Number.isInteger(n) || n < 1)
    throw new RecipeError(`--eval-tasks: "${flag}" is not a positive integer`);
  return [`train.evalTasks=${n}`];
}
