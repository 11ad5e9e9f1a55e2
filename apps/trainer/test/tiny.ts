/**
 * What the trainer's end-to-end tests share: a temp folder removed after the file's tests, a
 * reporter that prints nothing, and the tiny recipe they train — Plan-Path on 4×4 mazes (compact
 * roles, two turns) played by a 1-layer, 32-wide model, so a run of a few steps takes seconds.
 * Each test writes its own name, seed, store and train section around these lines.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Team, teamPolicies } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import { type ObjectStore, parseManifest, RunStore } from "@troupe/storage";
import { afterAll, vi } from "vitest";
import { createEngine } from "../src/engines.ts";
import { recipeEnvironment } from "../src/envs.ts";
import { main } from "../src/main.ts";
import type { Recipe } from "../src/recipe.ts";
import type { TrainReporter } from "../src/run/context.ts";
import { launchRun } from "../src/run/launch.ts";
import { type WarmStartResult, warmStart, warmStartAndTrain } from "../src/run/warm-start.ts";

/** The trainer app's folder: its CLI runs from here, as under `nx run trainer:…`. */
export const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The trainer CLI as a process of its own, as the arguments of `spawn`/`spawnSync`: node itself
 * runs it (tsx as an import hook), so a SIGKILL lands on the trainer. A TROUPE_KILL_AT of this
 * process is not inherited; `env` sets one.
 */
export function trainerProcess(args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  if (env.TROUPE_KILL_AT === undefined) delete childEnv.TROUPE_KILL_AT;
  const argv = ["--conditions=@troupe/source", "--import", "tsx", "src/main.ts", ...args];
  return [process.execPath, argv, { cwd: appRoot, env: childEnv }] as const;
}

/**
 * The trainer CLI in this process: its exit code and what it wrote to stdout and stderr (captured,
 * not printed). The SIGINT/SIGTERM handlers `train` installs for a graceful stop are removed after
 * it: they do not belong in the test runner's process.
 */
export async function trainerInProcess(
  argv: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return inProcess(() => main(argv));
}

/**
 * A command of the trainer (`main`, or one command's function) in this process: its exit code and
 * what it wrote to stdout and stderr, captured; the signal handlers it installed are removed after
 * it. A thrown error is thrown again, after the streams are restored.
 */
export async function inProcess(
  command: () => Promise<number>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const written = { stdout: "", stderr: "" };
  const spies = (["stdout", "stderr"] as const).map((stream) =>
    vi.spyOn(process[stream], "write").mockImplementation((chunk) => {
      written[stream] += String(chunk);
      return true;
    }),
  );
  const signals = ["SIGINT", "SIGTERM"] as const;
  const before = signals.map((s) => process.listeners(s));
  try {
    const code = await command();
    return { code, ...written };
  } finally {
    for (const spy of spies) spy.mockRestore();
    signals.forEach((s, i) => {
      for (const l of process.listeners(s)) if (!before[i]!.includes(l)) process.off(s, l);
    });
  }
}

/** A fresh folder under the system's temp folder, removed after this test file. */
export function tempRoot(prefix: string): string {
  const root = mkdtempSync(join(tmpdir(), `troupe-${prefix}-`));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

export const quiet: TrainReporter = { step() {}, eval() {}, note() {} };

/**
 * The environment and model sections of a tiny recipe (YAML lines): Plan-Path on 4×4 mazes with
 * compact roles and `maxTurns` turns, played by a 1-layer model `hidden` wide (its MLP twice that).
 */
export function tinyPlanPath({ maxTurns = 2, hidden = 32 } = {}): string {
  return `environment:
  name: plan-path
  options: { roles: compact, maxTurns: ${maxTurns}, rows: 4, cols: 4, blockedFraction: 0.1, minPathLength: 2 }
model: { hidden_size: ${hidden}, intermediate_size: ${2 * hidden}, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1 }`;
}

/** The environment and model sections of the tiny recipe (YAML lines). */
export const TINY_PLAN_PATH = tinyPlanPath();

/** AT-GRPO with two candidates after a two-step warm start (YAML lines). */
export const TINY_ATGRPO = `strategy: { name: atgrpo, candidates: 2 }
sampling: { temperature: 1, maxTokens: 8 }
sft: { steps: 2, batchSize: 8, lr: 0.003, mistakeRate: 0.3 }`;

/** TINY_ATGRPO for three RL steps of two tasks, evaluated on four held-out tasks (YAML lines). */
export const TINY_THREE_STEPS = `${TINY_ATGRPO}
train: { steps: 3, tasksPerStep: 2, evalEvery: 0, evalTasks: 4 }`;

/**
 * A tiny recipe's text: its name and seed, a store in the folder `storeRoot`, the tiny environment
 * and model, then `lines` (YAML: strategy, train, …).
 */
export const tinyRecipeText = (name: string, seed: number, storeRoot: string, lines: string) => `
name: ${name}
seed: ${seed}
store: file://${storeRoot}
${TINY_PLAN_PATH}
${lines}
`;

/** Writes tinyRecipeText as the recipe file `root/recipe.yaml`, its store in the folder `root/store`. */
export function writeTinyRecipe(root: string, name: string, seed: number, lines: string) {
  const recipePath = join(root, "recipe.yaml");
  const storeRoot = join(root, "store");
  writeFileSync(recipePath, tinyRecipeText(name, seed, storeRoot, lines));
  return { recipePath, storeRoot };
}

/**
 * The recipe of a command test, written by writeTinyRecipe in a fresh temp folder `root` (seed 5):
 * AT-GRPO with two candidates and 6-token answers, then `sections` (YAML lines: train, sft, …).
 */
export function tinyCommandRecipe(name: string, sections: string) {
  const root = tempRoot(`${name}-command`);
  const recipe = writeTinyRecipe(
    root,
    name,
    5,
    `strategy: { name: atgrpo, candidates: 2 }
sampling: { temperature: 1, maxTokens: 6 }
${sections}`,
  );
  return { root, ...recipe };
}

/**
 * The smallest recipe body (YAML lines) for tests that train many runs: one turn, a 16-wide model,
 * AT-GRPO after a one-step warm start.
 */
export const TINY_ONE_TURN = `${tinyPlanPath({ maxTurns: 1, hidden: 16 })}
strategy: { name: atgrpo, candidates: 2 }
sampling: { temperature: 1, maxTokens: 6 }
sft: { steps: 1, batchSize: 4 }`;

/** The sweep tests' base recipe: the one-turn tiny team, two steps, evaluated every step. */
export const tinySweepRecipe = (store: string) => `
name: tiny
seed: 0
store: file://${store}
${TINY_ONE_TURN}
train: { steps: 2, tasksPerStep: 2, evalEvery: 1, evalTasks: 64 }
`;

/**
 * `--set`s that shrink any recipe to a tiny budget: one RL step on one task, one held-out task
 * evaluated before and after, a 16-wide 1-layer model, 8-token answers.
 */
export const TINY_BUDGET = [
  "train.steps=1",
  "train.tasksPerStep=1",
  "train.evalTasks=1",
  "train.evalEvery=0",
  "sampling.maxTokens=8",
  "model={hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, max_position_embeddings: 4096}",
];

/**
 * A run as `train` starts it (launch.ts: every check, the config, the engine), in this process:
 * the (cached) warm start on a new run only, then train() — stopped after `stopAfterStep` when
 * given, as on SIGINT.
 */
export async function trainRun(recipe: Recipe, store: ObjectStore, runId: string, stopAfterStep?: number) {
  const runStore = new RunStore(store, runId);
  const resumed = (await runStore.latestCommittedStep()) !== undefined;
  return launchRun({ recipe, runStore, reporter: quiet, config: resumed ? "keep" : "write" }, async (run) => {
    const summary = await warmStartAndTrain({
      ...run,
      stopRequested: (step) => stopAfterStep !== undefined && step >= stopAfterStep,
    });
    return { summary, runStore, team: run.team };
  });
}

/**
 * The recipe's warm start (computed, or loaded from `store`'s cache) on a fresh engine of its team,
 * with the notes it reported; `read` looks at the result and the engine before the engine closes.
 */
export async function withWarmStart<T>(
  recipe: Recipe,
  store: ObjectStore,
  read: (warm: {
    result: WarmStartResult | undefined;
    notes: string[];
    engine: Engine;
    team: Team;
  }) => T | Promise<T>,
  stopRequested?: () => boolean,
): Promise<T> {
  const { trainerEnv, team } = recipeEnvironment(recipe);
  const engine = await createEngine(recipe, teamPolicies(team));
  try {
    const notes: string[] = [];
    const reporter = { ...quiet, note: (message: string) => notes.push(message) };
    const result = await warmStart({
      recipe,
      trainerEnv,
      team,
      engine,
      store,
      reporter,
      ...(stopRequested ? { stopRequested } : {}),
    });
    return await read({ result, notes, engine, team });
  } finally {
    await engine.close();
  }
}

/** The run's data objects under steps/ and checkpoints/ that no manifest lists. */
export async function orphans(store: ObjectStore, runId: string): Promise<string[]> {
  const keys = (await store.list(`runs/${runId}/`))
    .map((o) => o.key)
    .filter((k) => /^runs\/[^/]+\/(steps|checkpoints)\//.test(k));
  const listed = new Set<string>();
  for (const key of keys.filter((k) => k.endsWith("/manifest.json"))) {
    const folder = key.slice(0, -"/manifest.json".length);
    listed.add(key);
    for (const entry of parseManifest(await store.get(key), key).objects)
      listed.add(`${folder}/${entry.key}`);
  }
  return keys.filter((k) => !listed.has(k));
}

/**
 * `inner` with a second writer: the first putIfAbsent of `key` finds the same bytes already there,
 * put by "another process" a moment before (so it returns false, and the stored manifest is the
 * one this process wrote). Every other call goes to `inner` as it is.
 */
export function racedStore(inner: ObjectStore, key: string): ObjectStore {
  let raced = false;
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === "putIfAbsent")
        return async (k: string, body: Uint8Array) => {
          if (k !== key || raced) return target.putIfAbsent(k, body);
          raced = true;
          await target.put(k, body);
          return false;
        };
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
