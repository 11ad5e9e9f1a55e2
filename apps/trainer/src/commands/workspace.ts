/**
 * Where the commands find things: recipes and sweep grids by name or path, a recipe's store
 * (checked before any work), a run in a store by id or as a recipe's newest, and new run ids.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  checkStore,
  FileStore,
  listFolders,
  type ObjectStore,
  openStore,
  RunStore,
} from "@troupe/storage/node";
import { appRoot, workspaceRoot } from "../app-paths.ts";
import { type Recipe, RecipeError } from "../recipe.ts";

/** Where the command was typed (npm and nx start it in the app's folder and keep that in INIT_CWD). */
export const invokedFrom = process.env.INIT_CWD ?? process.cwd();

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
    // under nx the command runs in apps/trainer: a path from the workspace root works too
    ...(invokedFrom !== workspaceRoot ? [resolve(workspaceRoot, name)] : []),
    join(appRoot, folder, `${name}.yaml`),
    join(appRoot, folder, name),
  ];
  const found = candidates.find((p) => existsSync(p) && p.match(/\.ya?ml$/));
  if (!found) throw new RecipeError(`${what} "${name}" not found (looked at ${candidates.join(", ")})`);
  return found;
}

export function storeFor(recipe: Recipe) {
  return openStore(recipe.store, { cwd: workspaceRoot });
}

/**
 * The recipe's store, checked before any work (a folder that exists or can be made, writable, not
 * under /proc or /sys, not a file; S3 credentials and a probe): a StoreError line naming it, else.
 */
export async function checkedStoreFor(recipe: Recipe, options: { write: boolean }) {
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
export async function runIn(store: ObjectStore, runId: string): Promise<RunStore> {
  const here = new RunStore(store, runId);
  if (!(store instanceof FileStore) || (await store.head(`runs/${runId}/config.json`))) return here;
  const legacy = new FileStore(`${store.root}/runs`);
  return (await legacy.head(`runs/${runId}/config.json`)) ? new RunStore(legacy, runId) : here;
}

/** The newest run of a recipe in the store, else in the older local layout (see runIn). */
export async function findNewestRun(store: ObjectStore, recipe: Recipe): Promise<RunStore | undefined> {
  const id = await newestRunOf(store, recipe);
  if (id !== undefined) return new RunStore(store, id);
  if (!(store instanceof FileStore)) return undefined;
  const legacy = new FileStore(`${store.root}/runs`);
  const old = await newestRunOf(legacy, recipe);
  return old === undefined ? undefined : new RunStore(legacy, old);
}

export function timestampId(): string {
  return new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")
    .replace("T", "-");
}
