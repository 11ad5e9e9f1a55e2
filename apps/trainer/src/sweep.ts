/**
 * `trainer:sweep`: a grid of recipe variants ("points"), each trained with several seeds, every run
 * evaluated greedily on the same held-out tasks; per point the start and final held-out success
 * with intervals over seeds, the gain, and plots of the learning curves and final results.
 *
 * A grid file (YAML, zod-validated):
 *
 *   recipe: default                  # base recipe name or path (default "default"; a relative path
 *                                    # is tried next to the grid file first)
 *   set: { train.steps: 60 }         # overrides for every point: `a.b: value` or ["a.b=value", …]
 *   grid:                            # cartesian product, the first key varying slowest
 *     optimizer.lr: [0.0001, 0.0003]
 *     strategy.candidates: [4, 8]
 *   points:                          # and/or named points; with both, every point × every grid cell
 *     - { name: shared, set: { team.specialisation: shared } }
 *
 * Each point's recipe is the base recipe, then the file's `set`, the command's `--set`, the point's
 * `set` and its grid values, later ones winning (a value replaces the whole field, as with --set);
 * then the sweep's own: `train.evalTasks` (the same held-out tasks for every run), greedy
 * evaluation and the seed. Each (point, seed) is a normal run `<sweep id>-<point id>-s<seed>` in the
 * recipe's store, run with `runRecipe` (warm start + RL, resumable); its result is kept in
 * runs/<sweep id>/points/<point id>-s<seed>.json and read back on a rerun with the same id. Runs
 * go seed by seed (every point's seed 1, then seed 2, …), so an early stop still compares points.
 */
import { stableHash } from "@troupe/core";
import type { ObjectStore } from "@troupe/storage";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { wilson } from "./evaluate.ts";
import { type CurvePoint, finalSuccessSvg, learningCurvesSvg, meanCurve } from "./plots.ts";
import { loadRecipeText, parseRecipe, type Recipe, RecipeError } from "./recipe.ts";
import { interval, markdownTable, pct, signedPoints, table } from "./reporter.ts";
import { RunResultFields, runRecipe } from "./run-recipe.ts";
import { seedInterval } from "./stats.ts";
import type { TrainReporter } from "./train.ts";

// ------------------------------------------------------------------ the grid file

/** `a.b.c` paths as --set takes them. */
const KeyPath = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/, { error: "expected a key path like optimizer.lr" });

/** Overrides: a mapping `a.b: value`, or a list of "a.b=value" strings as --set takes them. */
const SetSchema = z.union(
  [z.array(z.string().regex(/^[^=]+=/, { error: 'expected "key=value"' })), z.record(KeyPath, z.unknown())],
  { error: 'expected a mapping (key.path: value) or a list of "key.path=value" strings' },
);

export const GridFileSchema = z
  .strictObject({
    recipe: z.string({ error: "expected a recipe name or path" }).min(1).optional(),
    set: SetSchema.optional(),
    grid: z
      .record(
        KeyPath,
        z.array(z.unknown(), { error: "expected a list of values, e.g. [0.0001, 0.0003]" }).min(1, {
          error: "expected at least one value",
        }),
        { error: "expected a mapping from key paths to lists of values" },
      )
      .optional(),
    points: z
      .array(
        z.strictObject({
          name: z.string({ error: "expected a name" }).min(1),
          set: SetSchema.default([]),
        }),
        { error: "expected a list of {name, set} points" },
      )
      .min(1, { error: "expected at least one point" })
      .optional(),
  })
  .refine((g) => g.grid !== undefined || g.points !== undefined, {
    error: "needs a grid: mapping or a points: list (or both)",
  });
export type GridFile = z.infer<typeof GridFileSchema>;

/** Parses and validates a grid file; a problem is one RecipeError line naming the key and the value. */
export function loadGridText(text: string, where = "sweep grid"): GridFile {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    const first = (error as Error).message.split("\n")[0]!.replace(/:$/, "");
    throw new RecipeError(`${where}: not valid YAML: ${first}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new RecipeError(`${where}: expected a mapping with recipe:, set:, grid: and/or points:`);
  }
  const parsed = GridFileSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  // An unknown key first: it is usually why a required one looks missing (a misspelt "name").
  const issue = parsed.error.issues.find((i) => i.code === "unrecognized_keys") ?? parsed.error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const prefix = issue.path.length ? `${issue.path.join(".")}.` : "";
    const known = issue.path.length ? "name, set" : "recipe, set, grid, points";
    throw new RecipeError(
      `${where}: unknown key ${issue.keys.map((k) => `"${prefix}${k}"`).join(", ")} (known: ${known})`,
    );
  }
  if (issue.code === "invalid_key") {
    const key = String(issue.path.at(-1));
    const parent = issue.path.slice(0, -1).map(String).join(".");
    throw new RecipeError(`${where}: ${parent}: "${key}" is not a key path like optimizer.lr`);
  }
  if (issue.path.length === 0) throw new RecipeError(`${where}: ${issue.message}`);
  const value = valueAt(raw, issue.path);
  const got = value === undefined ? "" : `, got ${JSON.stringify(value)}`;
  throw new RecipeError(`${where}: ${issue.path.map(String).join(".")}: ${issue.message}${got}`);
}

function valueAt(raw: unknown, path: readonly PropertyKey[]): unknown {
  let node = raw;
  for (const key of path) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** A `set` as --set assignments. Mapping values are written as JSON, which the YAML reader gives back unchanged. */
export function assignments(set: GridFile["set"]): string[] {
  if (set === undefined) return [];
  if (Array.isArray(set)) return [...set];
  return Object.entries(set).map(([key, value]) => `${key}=${JSON.stringify(value ?? null)}`);
}

const keyOf = (assignment: string) => assignment.slice(0, assignment.indexOf("=")).trim();

/** A value as it appears in a point's name: strings as they are, everything else as JSON. */
function formatValue(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value ?? null);
}

export interface SweepPoint {
  /** Readable and stable: the given name, or `key=value,…` of its grid cell (or both, comma-joined). */
  readonly name: string;
  /** Filesystem- and object-key-safe form of the name, part of run ids and result keys. */
  readonly id: string;
  /** The point's own overrides (its `set`, then its grid values), as --set assignments. */
  readonly set: readonly string[];
}

const MAX_POINT_ID = 48;

/** `optimizer.lr=0.0003,strategy.candidates=8` → `optimizer.lr-0.0003_strategy.candidates-8`. */
export function pointId(name: string): string {
  let id = name
    .replace(/=/g, "-")
    .replace(/,\s*/g, "_")
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .replace(/^[.-]+/, "");
  if (id === "") id = "point";
  // Run ids are at most 128 characters: long names keep a prefix and a hash of the whole name.
  if (id.length > MAX_POINT_ID) id = `${id.slice(0, MAX_POINT_ID - 9)}-${stableHash(name).slice(0, 8)}`;
  return id;
}

/** Keys the sweep sets itself for every run. */
const SWEEP_KEYS: Readonly<Record<string, string>> = {
  seed: "the sweep sets each run's seed from --seeds",
  "train.evalTasks": "every run evaluates on the same held-out tasks: use --eval-tasks",
  "train.evalTemperature": "held-out evaluation in a sweep is greedy",
};

/** The points of a grid file: named points × the grid's cartesian product, in file order. */
export function expandGrid(grid: GridFile, where = "sweep grid"): SweepPoint[] {
  const entries = Object.entries(grid.grid ?? {});
  for (const [key] of entries) {
    if (SWEEP_KEYS[key]) throw new RecipeError(`${where}: grid.${key}: ${SWEEP_KEYS[key]}`);
  }
  let cells: { name: string; set: string[] }[] = [{ name: "", set: [] }];
  for (const [key, values] of entries) {
    cells = cells.flatMap((cell) =>
      values.map((value) => ({
        name: cell.name ? `${cell.name},${key}=${formatValue(value)}` : `${key}=${formatValue(value)}`,
        set: [...cell.set, `${key}=${JSON.stringify(value ?? null)}`],
      })),
    );
  }
  const named = (grid.points ?? []).map((p, i) => {
    const set = assignments(p.set);
    for (const a of set) {
      const reason = SWEEP_KEYS[keyOf(a)];
      if (reason) throw new RecipeError(`${where}: points.${i}.set: ${keyOf(a)}: ${reason}`);
    }
    return { name: p.name, set };
  });
  const points = (named.length ? named : [{ name: "", set: [] as string[] }]).flatMap((p) =>
    cells.map((cell) => ({
      name: [p.name, cell.name].filter((n) => n !== "").join(","),
      set: [...p.set, ...cell.set],
    })),
  );
  const byName = new Map<string, string>();
  const byId = new Map<string, string>();
  return points.map((p) => {
    if (byName.has(p.name)) throw new RecipeError(`${where}: two points are named "${p.name}"`);
    byName.set(p.name, p.name);
    const id = pointId(p.name);
    const other = byId.get(id);
    if (other !== undefined) {
      throw new RecipeError(
        `${where}: points "${other}" and "${p.name}" both get the id "${id}": rename one`,
      );
    }
    byId.set(id, p.name);
    return { name: p.name, id, set: p.set };
  });
}

// ------------------------------------------------------------------ the plan

export interface PlannedPoint extends SweepPoint {
  /** The point's recipe (the base recipe's seed; each run sets its own). */
  readonly recipe: Recipe;
}

export interface SweepPlan {
  readonly sweepId: string;
  /** The command line that reproduces (or continues) the sweep. */
  readonly command: string;
  readonly gridFile: string;
  readonly grid: GridFile;
  /** The base recipe with the common overrides and the sweep's evaluation settings. */
  readonly base: Recipe;
  readonly seeds: readonly number[];
  readonly evalTasks: number;
  readonly points: readonly PlannedPoint[];
}

export interface PlanInput {
  readonly sweepId: string;
  readonly command: string;
  readonly gridFile: string;
  readonly grid: GridFile;
  /** The base recipe's YAML and where it came from (for messages). */
  readonly recipeText: string;
  readonly recipeWhere: string;
  /** --set of the command line (after the grid file's `set`). */
  readonly cliSets?: readonly string[];
  readonly seeds: readonly number[];
  readonly evalTasks: number;
}

const SWEEP_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

/** Validates everything before any work: every point's recipe parses, and they all share one store. */
export function planSweep(input: PlanInput): SweepPlan {
  if (!SWEEP_ID.test(input.sweepId)) {
    throw new RecipeError(
      `--id: "${input.sweepId}" must be 1-64 letters, digits, "_", "-" or "." (not leading): it names runs`,
    );
  }
  if (input.seeds.length === 0) throw new RecipeError("--seeds: give at least one seed");
  if (new Set(input.seeds).size !== input.seeds.length) throw new RecipeError("--seeds: a seed is repeated");
  const where = `sweep grid ${input.gridFile}`;
  const points = expandGrid(input.grid, where);
  const common = [...assignments(input.grid.set), ...(input.cliSets ?? [])];
  for (const a of assignments(input.grid.set)) {
    const reason = SWEEP_KEYS[keyOf(a)];
    if (reason) throw new RecipeError(`${where}: set: ${keyOf(a)}: ${reason}`);
  }
  const sweepSets = [`train.evalTasks=${input.evalTasks}`, "train.evalTemperature=0"];
  const base = loadRecipeText(input.recipeText, [...common, ...sweepSets], input.recipeWhere);
  const planned = points.map((point) => {
    const recipe = loadRecipeText(
      input.recipeText,
      [...common, ...point.set, ...sweepSets],
      `sweep point "${point.name}"`,
    );
    if (recipe.store !== base.store) {
      throw new RecipeError(
        `sweep point "${point.name}": store: every run of a sweep is in the base recipe's store (${base.store})`,
      );
    }
    return { ...point, recipe };
  });
  return {
    sweepId: input.sweepId,
    command: input.command,
    gridFile: input.gridFile,
    grid: input.grid,
    base,
    seeds: [...input.seeds],
    evalTasks: input.evalTasks,
    points: planned,
  };
}

/** A point's recipe for one seed. */
export function seedRecipe(point: PlannedPoint, seed: number): Recipe {
  return parseRecipe({ ...structuredClone(point.recipe), seed }, `sweep point "${point.name}" seed ${seed}`);
}

// ------------------------------------------------------------------ running

export const PointResultSchema = z.strictObject({
  point: z.string(),
  pointId: z.string(),
  /** stableHash of the run's recipe: a rerun with a changed point under the same id is refused. */
  recipeHash: z.string(),
  ...RunResultFields,
});
export type PointResult = z.infer<typeof PointResultSchema>;

export const resultKey = (sweepId: string, pointId: string, seed: number) =>
  `runs/${sweepId}/points/${pointId}-s${seed}.json`;
export const sweepRunId = (sweepId: string, pointId: string, seed: number) =>
  `${sweepId}-${pointId}-s${seed}`;

export interface SweepOptions {
  readonly plan: SweepPlan;
  readonly store: ObjectStore;
  readonly reporter: TrainReporter;
  /** Asked after every committed step: true stops the sweep there (the run resumes on a rerun). */
  readonly stopRequested?: (step: number) => boolean;
}

export interface SweepOutcome {
  /** Finished runs, seed by seed, each seed's points in grid order. */
  readonly results: PointResult[];
  /** True when stopRequested ended the sweep before every run had finished. */
  readonly stopped: boolean;
}

/** Runs (or reads back) every (point, seed), one at a time (runs share the cores). */
export async function sweep(options: SweepOptions): Promise<SweepOutcome> {
  const { plan, store, reporter } = options;
  const results: PointResult[] = [];
  const total = plan.points.length * plan.seeds.length;
  let index = 0;
  for (const seed of plan.seeds) {
    for (const point of plan.points) {
      index++;
      const recipe = seedRecipe(point, seed);
      const recipeHash = stableHash(recipe);
      const key = resultKey(plan.sweepId, point.id, seed);
      const runId = sweepRunId(plan.sweepId, point.id, seed);
      if (await store.head(key)) {
        const stored = PointResultSchema.parse(JSON.parse(new TextDecoder().decode(await store.get(key))));
        if (stored.recipeHash !== recipeHash) {
          throw new RecipeError(
            `sweep ${plan.sweepId}: point "${point.name}" seed ${seed} was run with another recipe ` +
              "(the grid, the base recipe or --set changed): pass a new --id",
          );
        }
        reporter.note(`sweep ${index}/${total}: ${point.name} seed ${seed} already done (${runId})`);
        results.push(stored);
        continue;
      }
      reporter.note(`sweep ${index}/${total}: ${point.name} seed ${seed} (run ${runId})`);
      const run = await runRecipe({
        recipe,
        runId,
        store,
        reporter,
        ...(options.stopRequested ? { stopRequested: options.stopRequested } : {}),
      });
      if (!run) return { results, stopped: true };
      const result: PointResult = { point: point.name, pointId: point.id, recipeHash, ...run };
      await store.put(key, new TextEncoder().encode(`${JSON.stringify(result, null, 2)}\n`));
      results.push(result);
    }
  }
  return { results, stopped: false };
}

// ------------------------------------------------------------------ the summary

const Interval = z.tuple([z.number(), z.number()]);

export const SweepRowSchema = z.strictObject({
  point: z.string(),
  id: z.string(),
  steps: z.number().int(),
  seeds: z.number().int(),
  /** Mean held-out success after the warm start (RL step 0). */
  startMean: z.number(),
  /** Mean final held-out success over seeds, with its 95% t-interval over seeds (2+ seeds). */
  finalMean: z.number(),
  finalCi95Seeds: Interval.optional(),
  /** All seeds' final evaluations pooled: k of n with its 95% Wilson interval. */
  pooled: z.strictObject({ successes: z.number().int(), tasks: z.number().int(), ci95: Interval }),
  /** Final − start per seed: the mean and its 95% t-interval over seeds (2+ seeds). */
  gainMean: z.number(),
  gainCi95Seeds: Interval.optional(),
  perSeed: z.array(
    z.strictObject({ seed: z.number().int(), runId: z.string(), start: z.number(), final: z.number() }),
  ),
  /** Mean wall minutes of the call that finished each run, and of the runs' RL steps alone. */
  minutesPerRun: z.number(),
  rlMinutesPerRun: z.number(),
  samplesPerRun: z.number(),
});
export type SweepRow = z.infer<typeof SweepRowSchema>;

export const SweepFileSchema = z.strictObject({
  sweepId: z.string(),
  command: z.string(),
  gridFile: z.string(),
  grid: GridFileSchema,
  base: z.record(z.string(), z.unknown()),
  seeds: z.array(z.number().int()),
  evalTasks: z.number().int(),
  points: z.array(z.strictObject({ name: z.string(), id: z.string(), set: z.array(z.string()) })),
  rows: z.array(SweepRowSchema),
  /** Per point: mean held-out success over seeds at every evaluated RL step. */
  curves: z.record(
    z.string(),
    z.array(
      z.strictObject({
        step: z.number().int(),
        n: z.number().int(),
        mean: z.number(),
        ci95: Interval.optional(),
      }),
    ),
  ),
  results: z.array(PointResultSchema),
});
export type SweepFile = z.infer<typeof SweepFileSchema>;

const average = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** One row per point with results, in grid order. */
export function summariseSweep(plan: SweepPlan, results: readonly PointResult[]): SweepRow[] {
  return plan.points.flatMap((point) => {
    const runs = results.filter((r) => r.pointId === point.id).sort((a, b) => a.seed - b.seed);
    if (runs.length === 0) return [];
    const final = seedInterval(runs.map((r) => r.successRate));
    const gain = seedInterval(
      runs.map((r) => r.successRate - r.startSuccessRate),
      [-1, 1],
    );
    const successes = runs.reduce((n, r) => n + r.successes, 0);
    const tasks = runs.reduce((n, r) => n + r.tasks, 0);
    return [
      {
        point: point.name,
        id: point.id,
        steps: point.recipe.train.steps,
        seeds: runs.length,
        startMean: average(runs.map((r) => r.startSuccessRate)),
        finalMean: final.mean,
        ...(final.ci95 ? { finalCi95Seeds: final.ci95 } : {}),
        pooled: { successes, tasks, ci95: wilson(successes, tasks) },
        gainMean: gain.mean,
        ...(gain.ci95 ? { gainCi95Seeds: gain.ci95 } : {}),
        perSeed: runs.map((r) => ({
          seed: r.seed,
          runId: r.runId,
          start: r.startSuccessRate,
          final: r.successRate,
        })),
        minutesPerRun: average(runs.map((r) => r.seconds)) / 60,
        rlMinutesPerRun: average(runs.map((r) => r.rlSeconds ?? 0)) / 60,
        samplesPerRun: Math.round(average(runs.map((r) => r.samples))),
      },
    ];
  });
}

/** The sweep as table rows: `table` prints them, `markdownTable` writes them. */
export function sweepRows(rows: readonly SweepRow[]): Record<string, string | number>[] {
  return rows.map((row) => ({
    point: row.point,
    steps: row.steps,
    seeds: row.seeds,
    "start %": pct(row.startMean),
    "final %": pct(row.finalMean),
    "95% CI (seeds)": interval(row.finalCi95Seeds),
    "pooled k/n": `${row.pooled.successes}/${row.pooled.tasks}`,
    "95% CI (pooled)": interval(row.pooled.ci95),
    "gain (points)": signedPoints(row.gainMean),
    "gain 95% CI": interval(row.gainCi95Seeds, signedPoints),
    "per seed: start → final %": row.perSeed
      .map((s) => `s${s.seed} ${pct(s.start)}→${pct(s.final)}`)
      .join(", "),
    "min/run": row.minutesPerRun.toFixed(1),
  }));
}

function sweepMarkdown(plan: SweepPlan, rows: readonly SweepRow[], results: readonly PointResult[]): string {
  const runs = results
    .slice()
    .sort((a, b) => a.pointId.localeCompare(b.pointId) || a.seed - b.seed)
    .map((r) => ({
      point: r.point,
      seed: r.seed,
      run: `\`${r.runId}\``,
      "start %": pct(r.startSuccessRate),
      "final %": pct(r.successRate),
      "k/n": `${r.successes}/${r.tasks}`,
      samples: r.samples,
      "RL min": ((r.rlSeconds ?? 0) / 60).toFixed(1),
    }));
  return [
    `# Sweep \`${plan.sweepId}\``,
    "",
    "Every number on this page comes from this command; rerun it to reproduce the sweep or continue it",
    "(finished runs are read back from the store, an interrupted run resumes from its newest committed step):",
    "",
    "```bash",
    plan.command,
    "```",
    "",
    `Base recipe \`${plan.base.name}\` from \`${plan.gridFile}\`; ${plan.points.length} points × seeds ` +
      `${plan.seeds.join(", ")}. Held-out success is greedy decoding on the same ${plan.evalTasks} test tasks ` +
      "for every run. *start*: after the warm start (RL step 0); *final*: after the last RL step. Means are " +
      "over seeds; *95% CI (seeds)* is the t-interval over seeds (the uncertainty that matters: seeds differ " +
      "in warm start, tasks and sampling); *pooled k/n* adds up every seed's final evaluation, with its Wilson " +
      "interval (test-set noise only); *gain* is final − start per seed, in percentage points, with its " +
      "t-interval over seeds.",
    "",
    markdownTable(sweepRows(rows)),
    "",
    "![Held-out success by RL step](curves.svg)",
    "",
    "![Start and final held-out success per point](final.svg)",
    "",
    "## Runs",
    "",
    markdownTable(runs),
    "",
  ].join("\n");
}

export interface SweepWritten {
  readonly json: string;
  readonly markdown: string;
  readonly curves: string;
  readonly final: string;
  /** The table as plain text, for the terminal. */
  readonly text: string;
}

/** Writes sweep.json, sweep.md, curves.svg and final.svg to runs/<sweep id>/; returns their keys. */
export async function writeSweep(
  store: ObjectStore,
  plan: SweepPlan,
  results: readonly PointResult[],
): Promise<SweepWritten> {
  const rows = summariseSweep(plan, results);
  const groups = rows.map((row) => ({
    name: row.point,
    results: results.filter((r) => r.pointId === row.id),
  }));
  const curves: Record<string, CurvePoint[]> = Object.fromEntries(
    groups.map((g) => [g.name, meanCurve(g.results)]),
  );
  const file: SweepFile = {
    sweepId: plan.sweepId,
    command: plan.command,
    gridFile: plan.gridFile,
    grid: plan.grid,
    base: plan.base,
    seeds: [...plan.seeds],
    evalTasks: plan.evalTasks,
    points: plan.points.map((p) => ({ name: p.name, id: p.id, set: [...p.set] })),
    rows,
    curves,
    results: [...results],
  };
  const folder = `runs/${plan.sweepId}`;
  const keys = {
    json: `${folder}/sweep.json`,
    markdown: `${folder}/sweep.md`,
    curves: `${folder}/curves.svg`,
    final: `${folder}/final.svg`,
  };
  const what = `sweep ${plan.sweepId}`;
  const encoder = new TextEncoder();
  await store.put(keys.json, encoder.encode(`${JSON.stringify(file, null, 2)}\n`));
  await store.put(keys.markdown, encoder.encode(sweepMarkdown(plan, rows, results)));
  await store.put(keys.curves, encoder.encode(await learningCurvesSvg(groups, what)));
  await store.put(keys.final, encoder.encode(await finalSuccessSvg(groups, what)));
  return { ...keys, text: table(sweepRows(rows)) };
}
