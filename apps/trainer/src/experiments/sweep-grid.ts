/**
 * `trainer:sweep`, what it runs: a grid of recipe variants ("points"), each trained with several
 * seeds (sweep.ts runs them, sweep-results.ts tabulates them).
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
 * evaluation and the seed. Everything is checked before any run starts (planSweep).
 */
import { stableHash } from "@troupe/core";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { loadRecipeText, parseRecipe, type Recipe, RecipeError } from "../recipe.ts";

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
