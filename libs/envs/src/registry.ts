/**
 * The environments a recipe or a published team can name. Everything environment-specific lives in
 * the environment's own folder as an `EnvironmentEntry` (options with defaults, sandbox need, tasks,
 * team, demonstrations, answer rendering); adding an environment to the library is a folder and a
 * line here. An environment of one's own needs neither: a module exporting an entry is registered
 * at run time (`registerEnvironmentModule`, done by `prepareEnvironment` in `@troupe/envs/module`)
 * under its name, with the path and content hash of the file it came from.
 * The trainer (recipes), the evaluator and the API (team manifests) all build environments through
 * this one registry, so a team is served with exactly the environment it was trained on.
 */
import type { AgentId, Environment, Split, Task, Team } from "@troupe/core";
import type { CodeRunner } from "@troupe/sandbox";
import type { ExecutedAction, SolveAnswer } from "./answer.ts";
import { EnvironmentOptionsError, exported, type FileRef } from "./files.ts";

export type * from "./answer.ts";
export * from "./files.ts";

import { codingEntry } from "./coding/entry.ts";
import { dataFileEntry } from "./data-file/entry.ts";
import type { EnvironmentEntry, PayloadParts, Specialisation } from "./entry.ts";
import { planPathEntry, sokobanEntry, sudokuEntry } from "./games/entry.ts";
import { mathEntry } from "./math/entry.ts";
import { writingEntry } from "./writing/entry.ts";

export const ENVIRONMENTS: Readonly<Record<string, EnvironmentEntry>> = {
  "plan-path": planPathEntry,
  sokoban: sokobanEntry,
  sudoku: sudokuEntry,
  coding: codingEntry,
  math: mathEntry,
  writing: writingEntry,
  "data-file": dataFileEntry,
};

/** The environments registered from modules in this process: name → entry and the file it came from. */
const MODULES = new Map<string, { readonly entry: EnvironmentEntry; readonly module: FileRef }>();

/** The checks an entry from a module must pass, each failure one line naming the file. */
function checkModuleEntry(value: unknown, where: string): EnvironmentEntry {
  const entry = value as Partial<EnvironmentEntry> | null;
  const problem =
    typeof entry !== "object" || entry === null
      ? "exports no environment entry (export default {description, options, build})"
      : typeof entry.build !== "function"
        ? "its entry has no build(options, runner) function"
        : typeof entry.description !== "string"
          ? "its entry has no description"
          : typeof entry.options?.safeParse !== "function" || typeof entry.options.shape !== "object"
            ? "its entry's options are not a zod object (z.object({...}).strict())"
            : entry.name !== undefined && !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(entry.name)
              ? `its name "${entry.name}" is not 1–64 characters of a-z, 0-9, '.', '_', '-'`
              : undefined;
  if (problem !== undefined) throw new EnvironmentOptionsError("environment.module", `${where}: ${problem}`);
  return entry as EnvironmentEntry;
}

/** The name a module's entry is registered under: its own, else the file's name without extension. */
export function moduleEnvironmentName(entry: { readonly name?: string }, path: string): string {
  if (entry.name !== undefined) return entry.name;
  const file = path.split(/[\\/]/).at(-1) ?? path;
  return file
    .replace(/\.[cm]?[jt]s$/, "")
    .toLowerCase()
    .replace(/[^a-z0-9._-]/g, "-");
}

/**
 * Registers the entry a module exports (its default export, else `environment`), under its name,
 * and returns the name. Another file under a name already taken (or a built-in's name) is refused.
 */
export function registerEnvironmentModule(exports: unknown, module: FileRef): string {
  const entry = checkModuleEntry(
    exported(exports, "environment", (v) => typeof (v as { build?: unknown }).build === "function"),
    module.path,
  );
  const name = moduleEnvironmentName(entry, module.path);
  if (Object.hasOwn(ENVIRONMENTS, name)) {
    throw new EnvironmentOptionsError(
      "environment.module",
      `${module.path}: its name "${name}" is a built-in environment's; give the entry another name`,
    );
  }
  // The same file edited since (a recipe read after its run recorded the old content) replaces
  // the entry; another file under the same name is refused.
  const known = MODULES.get(name);
  if (known !== undefined && known.module.sha256 !== module.sha256 && known.module.path !== module.path) {
    throw new EnvironmentOptionsError(
      "environment.module",
      `${module.path}: environment "${name}" is already loaded from ${known.module.path}; give the entry another name`,
    );
  }
  MODULES.set(name, { entry, module });
  return name;
}

/** The module an environment was registered from, when it came from one. */
export function environmentModule(name: string): FileRef | undefined {
  return MODULES.get(name)?.module;
}

/** The payload's inputs and labels of an environment (absent when it does not say). */
export function payloadParts(name: string): PayloadParts | undefined {
  return entryOf(name).payload;
}

/** The options of an environment whose values are files (path → loaded by prepareEnvironment). */
export function environmentFiles(name: string): Readonly<Record<string, "data" | "module">> {
  return entryOf(name).files ?? {};
}

/**
 * The payload fields of every environment that separates them: what a task gives (inputs) and
 * what only scoring reads (labels). The API's OpenAPI document shows them.
 */
export function payloadFields(): Record<string, { inputs: string[]; labels: string[] }> {
  const fields: Record<string, { inputs: string[]; labels: string[] }> = {};
  for (const name of environmentNames()) {
    const parts = findEntry(name)?.payload;
    if (parts)
      fields[name] = { inputs: Object.keys(parts.inputs.shape), labels: Object.keys(parts.labels.shape) };
  }
  return fields;
}

/** Every environment this process knows: the built-ins, then those loaded from modules. */
export function environmentNames(): string[] {
  return [...Object.keys(ENVIRONMENTS), ...MODULES.keys()];
}

export interface RegisteredEnvironment {
  readonly name: string;
  /** The options as given (without defaults filled in, and without the runner). */
  readonly options: Readonly<Record<string, unknown>>;
  readonly env: Environment<unknown, unknown>;
  /**
   * What held-out evaluation plays: `env`, or a cheaper one with the same states, team rewards and
   * success that leaves out local rewards only training reads (`BuiltEnvironment.evaluationEnv`).
   */
  readonly evaluationEnv: Environment<unknown, unknown>;
  /** Whether the agents' code runs (the environment holds a sandbox runner). */
  readonly needsSandbox: boolean;
  /** `count` distinct tasks of a split (at most a dataset split's size); the same (split, seed) gives the same tasks. */
  generateTasks(split: Split, count: number, seed: number): Task<unknown>[];
  team(specialisation: Specialisation): Team;
  /** The solver's next action for an agent, when the environment has a solver. */
  readonly demo?: (task: Task<unknown>, state: unknown, agent: AgentId) => string;
  /** The answer of a solve from the final state and the executed actions. */
  render(state: unknown, actions: readonly ExecutedAction[]): SolveAnswer;
  /** The payload's inputs and labels, when the environment says. */
  readonly payload?: PayloadParts;
}

function findEntry(name: string): EnvironmentEntry | undefined {
  return Object.hasOwn(ENVIRONMENTS, name) ? ENVIRONMENTS[name] : MODULES.get(name)?.entry;
}

function entryOf(name: string): EnvironmentEntry {
  const entry = findEntry(name);
  if (!entry) {
    throw new EnvironmentOptionsError(
      "environment.name",
      `unknown environment "${name}" (known: ${environmentNames().join(", ")}; or environment.module: your own file)`,
    );
  }
  return entry;
}

/**
 * An environment's options with its defaults filled in; an unknown key (say, another
 * environment's option) or a bad value fails naming `environment.options.<key>`.
 */
export function environmentOptions(name: string, options: Readonly<Record<string, unknown>>) {
  const entry = entryOf(name);
  const parsed = entry.options.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === "unrecognized_keys") {
      const known = Object.keys(entry.options.shape).join(", ");
      throw new EnvironmentOptionsError(
        `environment.options.${issue.keys[0]}`,
        `not an option of environment "${name}" (its options: ${known})`,
      );
    }
    const key = ["environment", "options", ...issue.path.map(String)].join(".");
    throw new EnvironmentOptionsError(key, issue.message);
  }
  return parsed.data as Record<string, unknown>;
}

/** Whether an environment with these options runs the agents' code (and so needs a sandbox). */
export function needsSandbox(environment: {
  readonly name: string;
  readonly options: Readonly<Record<string, unknown>>;
}): boolean {
  const { runner: _runner, ...options } = environment.options;
  const entry = entryOf(environment.name);
  return entry.needsSandbox?.(environmentOptions(environment.name, options)) ?? false;
}

/**
 * Builds a registered environment. `options.runner` is the sandbox for environments that run the
 * agents' code (required for them); every other key is validated against the entry's options.
 */
export function createEnvironment(name: string, options: Record<string, unknown>): RegisteredEnvironment {
  const entry = entryOf(name);
  const { runner, ...given } = options;
  const parsed = environmentOptions(name, given);
  const sandboxed = entry.needsSandbox?.(parsed) ?? false;
  if (sandboxed && runner === undefined) {
    throw new EnvironmentOptionsError(
      "environment.name",
      `environment "${name}" with these options runs the agents' code and needs a sandbox runner`,
    );
  }
  const built = entry.build(parsed, sandboxed ? (runner as CodeRunner) : undefined);
  return {
    name,
    options: given,
    env: built.env,
    evaluationEnv: built.evaluationEnv ?? built.env,
    needsSandbox: sandboxed,
    generateTasks: built.generateTasks,
    team: built.team,
    ...(built.demo ? { demo: built.demo } : {}),
    ...((built.payload ?? entry.payload) ? { payload: built.payload ?? entry.payload } : {}),
    render: (state, actions) => (entry.render ? entry.render(state, actions) : { kind: "state", state }),
  };
}

/**
 * The answer of a solve in environment `name`: a registry name, or `<name>+<baseline>` for an
 * environment answered a baseline's way (baselines.ts), whose state wraps the real one.
 */
export function renderAnswer(name: string, state: unknown, actions: readonly ExecutedAction[]): SolveAnswer {
  const [base, baseline] = name.split("+");
  const entry = findEntry(base!);
  const inner = baseline ? (state as { inner: unknown }).inner : state;
  if (!entry?.render) return { kind: "state", state: inner };
  return entry.render(inner, actions);
}

/** The environment's team with turn overrides (a recipe's or a team manifest's). */
export function configuredTeam(
  registered: RegisteredEnvironment,
  team: {
    readonly specialisation: Specialisation;
    readonly maxTurns?: number | undefined;
    readonly turnOrder?: "sequential" | "parallel" | undefined;
  },
): Team {
  const base = registered.team(team.specialisation);
  return { ...base, maxTurns: team.maxTurns ?? base.maxTurns, turnOrder: team.turnOrder ?? base.turnOrder };
}
