/**
 * What every trainer command shares at its edges: checking `--set` keys against the recipe schema
 * before anything loads (so a typo is blamed on the flag, with a suggestion, not on the recipe
 * file), the one `error:` line a user error becomes, and where a store's objects are on disk.
 */
import { relative } from "node:path";
import { FileStore, type ObjectStore } from "@troupe/storage/node";
import type { z } from "zod";
import { RecipeError, RecipeSchema } from "../recipe.ts";

/** The zod internals this file reads (zod 4's `_zod.def`), as narrow as it needs them. */
interface Def {
  readonly type: string;
  readonly innerType?: z.ZodType;
  readonly out?: z.ZodType;
  readonly shape?: Record<string, z.ZodType>;
  readonly options?: readonly z.ZodType[];
  readonly getter?: () => z.ZodType;
}
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The schema a value is checked against, through defaults, optionals, preprocessing and lazies. */
function unwrap(schema: z.ZodType): z.ZodType {
  for (;;) {
    const def = defOf(schema);
    if (def.innerType) schema = def.innerType;
    else if (def.type === "pipe" && def.out) schema = def.out;
    else if (def.type === "lazy" && def.getter) schema = def.getter();
    else return schema;
  }
}

/**
 * The keys directly below a schema: a map for objects (a union's options merged, so
 * `strategy.candidates` is a key whichever strategy the recipe names), "any" where any key goes
 * (records, unknown), undefined for a value that has no keys.
 */
function childrenOf(schema: z.ZodType): Map<string, z.ZodType> | "any" | undefined {
  const s = unwrap(schema);
  const def = defOf(s);
  if (def.type === "object" && def.shape) return new Map(Object.entries(def.shape));
  if (def.type === "union" && def.options) {
    const merged = new Map<string, z.ZodType>();
    for (const option of def.options) {
      const children = childrenOf(option);
      if (children === "any") return "any";
      for (const [k, v] of children ?? []) if (!merged.has(k)) merged.set(k, v);
    }
    return merged;
  }
  if (def.type === "record" || def.type === "unknown" || def.type === "any") return "any";
  return undefined;
}

/** Every dotted key path of the schema, sections and fields, down to `depth`. */
function allPaths(schema: z.ZodType, prefix = "", depth = 4): string[] {
  const children = childrenOf(schema);
  if (children === undefined || children === "any" || depth === 0) return [];
  return [...children].flatMap(([k, v]) => [`${prefix}${k}`, ...allPaths(v, `${prefix}${k}.`, depth - 1)]);
}

export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** The known key a typo most likely meant: the closest full path, or a field of the same name. */
export function suggestKey(given: string, schema: z.ZodType = RecipeSchema): string | undefined {
  const paths = allPaths(schema);
  const lastOf = (p: string) => p.slice(p.lastIndexOf(".") + 1);
  let best: { path: string; distance: number } | undefined;
  for (const path of paths) {
    const distance = Math.min(
      editDistance(given, path),
      // `steps=…` for `train.steps`: the same field name, one section off.
      lastOf(path) === lastOf(given) ? 1 : Number.POSITIVE_INFINITY,
    );
    if (!best || distance < best.distance) best = { path, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(given.length / 4)) ? best.path : undefined;
}

/**
 * Checks `--set key=value` assignments against the recipe schema's keys (values are checked by
 * the schema itself, after the recipe loads): an unknown key fails naming the flag, with the
 * closest known key.
 */
export function checkSetKeys(assignments: readonly string[], schema: z.ZodType = RecipeSchema): void {
  for (const assignment of assignments) {
    const eq = assignment.indexOf("=");
    if (eq <= 0) throw new RecipeError(`--set expects key=value, got "${assignment}"`);
    const key = assignment.slice(0, eq);
    let node: z.ZodType = schema;
    const path = key.split(".");
    for (const [i, segment] of path.entries()) {
      const children = childrenOf(node);
      if (children === "any") break;
      const where = path.slice(0, i).join(".");
      if (children === undefined) {
        throw new RecipeError(`--set ${key}: "${where}" is a value, not a section`);
      }
      const child = children.get(segment);
      if (child === undefined) {
        const suggestion = suggestKey(key, schema);
        throw new RecipeError(
          `--set ${key}: unknown key${where ? ` "${segment}" in ${where}` : ""}` +
            (suggestion ? ` (did you mean ${suggestion}?)` : ""),
        );
      }
      node = child;
    }
  }
}

/**
 * `--recipe <name|path>` (a file in apps/trainer/recipes by name, else a path; default: `default`)
 * and `--set key=value` (repeatable, applied over the file): the flags of every command that loads a
 * recipe to run it (parseArgs options; their help is usage.ts's RECIPE_FLAGS).
 */
export const RECIPE_OPTIONS = {
  recipe: { type: "string", default: "default" },
  set: { type: "string", multiple: true, default: [] as string[] },
} as const;

/** The `--set` values among a command's arguments (`--set k=v` and `--set=k=v`), before parsing. */
export function setArguments(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") break;
    if (arg === "--set" && i + 1 < argv.length) out.push(argv[++i]!);
    else if (arg.startsWith("--set=")) out.push(arg.slice("--set=".length));
  }
  return out;
}

/** True when a command's arguments ask for its help (before a `--` that ends the flags). */
export function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/**
 * A user error as one line: multi-line messages (several recipe issues) joined, so a terminal,
 * a CI log and a test all see exactly one `error:` line.
 */
export function errorLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const lines = message
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  return `error: ${lines.join("; ") || (error as Error).name || "unknown error"}`;
}

/**
 * Where a key of a store is, for a person to open: a path relative to `from` (the folder the
 * command was typed in) for a local store — absolute when outside it — else the store's URI.
 */
export function storeLocation(store: ObjectStore, key: string, from: string): string {
  if (store instanceof FileStore) {
    const absolute = `${store.root.replace(/\/$/, "")}/${key}`;
    const rel = relative(from, absolute);
    return rel && !rel.startsWith("..") && !rel.startsWith("/") ? rel : absolute;
  }
  return `${store.uri.replace(/\/$/, "")}/${key}`;
}
