/**
 * The environments a recipe or a published team can name. Everything environment-specific lives in
 * the environment's own folder as an `EnvironmentEntry` (options with defaults, sandbox need, tasks,
 * team, demonstrations, answer rendering); adding an environment is a folder and a line here.
 * The trainer (recipes), the evaluator and the API (team manifests) all build environments through
 * this one registry, so a team is served with exactly the environment it was trained on.
 */
import type { AgentId, Environment, Split, Task, Team } from "@troupe/core";
import type { CodeRunner } from "@troupe/sandbox";
import type { ExecutedAction, SolveAnswer } from "./answer.ts";

export type * from "./answer.ts";

import { codingEntry } from "./coding/entry.ts";
import type { EnvironmentEntry, Specialisation } from "./entry.ts";
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
};

export interface RegisteredEnvironment {
  readonly name: string;
  /** The options as given (without defaults filled in, and without the runner). */
  readonly options: Readonly<Record<string, unknown>>;
  readonly env: Environment<unknown, unknown>;
  /** Whether the agents' code runs (the environment holds a sandbox runner). */
  readonly needsSandbox: boolean;
  /** `count` distinct tasks of a split (at most a dataset split's size); the same (split, seed) gives the same tasks. */
  generateTasks(split: Split, count: number, seed: number): Task<unknown>[];
  team(specialisation: Specialisation): Team;
  /** The solver's next action for an agent, when the environment has a solver. */
  readonly demo?: (task: Task<unknown>, state: unknown, agent: AgentId) => string;
  /** The answer of a solve from the final state and the executed actions. */
  render(state: unknown, actions: readonly ExecutedAction[]): SolveAnswer;
}

/** A bad environment name or option: one line naming the key. */
export class EnvironmentOptionsError extends Error {
  override readonly name = "EnvironmentOptionsError";
  /** The key, e.g. `environment.options.rows`. */
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`${key}: ${message}`);
  }
}

function entryOf(name: string): EnvironmentEntry {
  const entry = Object.hasOwn(ENVIRONMENTS, name) ? ENVIRONMENTS[name] : undefined;
  if (!entry) {
    throw new EnvironmentOptionsError(
      "environment.name",
      `unknown environment "${name}" (known: ${Object.keys(ENVIRONMENTS).join(", ")})`,
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
  return entryOf(environment.name).needsSandbox(environmentOptions(environment.name, options));
}

/**
 * Builds a registered environment. `options.runner` is the sandbox for environments that run the
 * agents' code (required for them); every other key is validated against the entry's options.
 */
export function createEnvironment(name: string, options: Record<string, unknown>): RegisteredEnvironment {
  const entry = entryOf(name);
  const { runner, ...given } = options;
  const parsed = environmentOptions(name, given);
  const sandboxed = entry.needsSandbox(parsed);
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
    needsSandbox: sandboxed,
    generateTasks: built.generateTasks,
    team: built.team,
    ...(built.demo ? { demo: built.demo } : {}),
    render: entry.render,
  };
}

/**
 * The answer of a solve in environment `name`: a registry name, or `<name>+<baseline>` for an
 * environment answered a baseline's way (baselines.ts), whose state wraps the real one.
 */
export function renderAnswer(name: string, state: unknown, actions: readonly ExecutedAction[]): SolveAnswer {
  const [base, baseline] = name.split("+");
  const entry = Object.hasOwn(ENVIRONMENTS, base!) ? ENVIRONMENTS[base!] : undefined;
  if (!entry) return { kind: "state", state };
  return entry.render(baseline ? (state as { inner: unknown }).inner : state, actions);
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
