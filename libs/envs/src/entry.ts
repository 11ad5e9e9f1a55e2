/**
 * What one environment tells the registry: its options (a strict zod object whose every field has
 * a default), whether those options make it run agent-written code, how to build it (tasks per
 * split, default team, demonstrations where a solver exists) and how to render a final state as
 * the answer of a solve. Each environment folder exports one `EnvironmentEntry`; registry.ts lists
 * them by name.
 */
import {
  type AgentId,
  deriveSeed,
  type Environment,
  perRoleTeam,
  Rng,
  type Split,
  sharedPolicyTeam,
  type Task,
  type Team,
  type TurnOrder,
} from "@troupe/core";
import type { CodeRunner } from "@troupe/sandbox";

/** What an entry is written with, so that a module of one's own imports its types from here alone. */
export type {
  AgentId,
  Environment,
  JointAction,
  Observation,
  Split,
  StepResult,
  Task,
  Team,
  TurnOrder,
} from "@troupe/core";

import type { z } from "zod";
import type { ExecutedAction, SolveAnswer } from "./answer.ts";

export type Specialisation = "shared" | "per-role";

export interface BuiltEnvironment {
  readonly env: Environment<unknown, unknown>;
  /** `count` distinct tasks of a split (fewer when a dataset's split is smaller); the same (split, seed) gives the same tasks. */
  generateTasks(split: Split, count: number, seed: number): Task<unknown>[];
  team(specialisation: Specialisation): Team;
  /**
   * The solver's next action for an agent, when the environment has a solver: the warm start
   * (`sft.steps`) learns from these. Without one a recipe must set no `sft` section, and RL starts
   * from the untrained model.
   */
  readonly demo?: (task: Task<unknown>, state: unknown, agent: AgentId) => string;
  /** The payload's inputs and labels when they depend on the options (the data-file environment); else the entry's. */
  readonly payload?: PayloadParts;
  /**
   * The environment held-out evaluation plays, when it can be cheaper than `env`: the same states,
   * team rewards, `done` and `success` for the same actions, without local rewards that only
   * training reads (coder + tester: the tester's asserts are not judged against mutants). Absent: `env`.
   */
  readonly evaluationEnv?: Environment<unknown, unknown>;
}

export interface EnvironmentEntry<S extends z.ZodObject = z.ZodObject> {
  /**
   * The environment's name, for an entry that comes from a module of one's own (the registry
   * names its own entries; a module's defaults to the file's name without its extension).
   */
  readonly name?: string;
  /** One line for error messages and docs. */
  readonly description: string;
  /** Every option with its default; strict, so a key of another environment is refused by name. */
  readonly options: S;
  /**
   * A task's payload in two parts: the inputs a served task must give, and the labels (reference
   * answers, hidden tests) that only training and scoring read. A task with inputs only is
   * played and not judged (`solved: null`). Absent: the whole payload is inputs.
   */
  readonly payload?: PayloadParts;
  /** Options whose values are files (paths relative to the recipe), recorded with their content's hash. */
  readonly files?: Readonly<Record<string, "data" | "module">>;
  /** Whether these options make agents' code run (then a sandbox runner is required); absent: never. */
  needsSandbox?(options: z.output<S>): boolean;
  build(options: z.output<S>, runner: CodeRunner | undefined): BuiltEnvironment;
  /** The answer of a solve from the final state and the executed actions; absent: the final state (`kind: "state"`), drawn as the turns' transcript. */
  render?(state: unknown, actions: readonly ExecutedAction[]): SolveAnswer;
}

/** The inputs and labels of a task's payload (zod objects; the labels are optional in a served task). */
export interface PayloadParts {
  readonly inputs: z.ZodObject;
  readonly labels: z.ZodObject;
}

/** Keeps an entry's option types while listing entries of different schemas together. */
export function defineEnvironment<S extends z.ZodObject>(entry: EnvironmentEntry<S>): EnvironmentEntry {
  return entry as unknown as EnvironmentEntry;
}

/**
 * Tasks from a finite dataset split. Train tasks are a window of `count` consecutive problems of a
 * fixed shuffle, placed by the seed (so every step sees a different batch, reproducibly);
 * validation and test tasks at seed 0 are the split's first `count` problems in file order, the
 * stable held-out set evaluation uses. A split gives at most its size (no task repeats).
 */
export function datasetTasks<P>(
  name: string,
  splits: () => Readonly<Record<"train" | "test", readonly P[]>>,
  idOf: (problem: P) => string,
): (split: Split, count: number, seed: number) => Task<P>[] {
  const shuffled = new Map<string, readonly P[]>();
  return (split, count, seed) => {
    const source = split === "train" ? "train" : "test"; // datasets have no separate validation split
    let problems = shuffled.get(source);
    if (!problems) {
      const list = [...splits()[source]];
      if (source === "train") {
        const rng = new Rng(deriveSeed(0, name, "train-order"));
        for (let i = list.length - 1; i > 0; i--) {
          const j = rng.int(i + 1);
          [list[i], list[j]] = [list[j]!, list[i]!];
        }
      }
      problems = list;
      shuffled.set(source, problems);
    }
    const n = Math.min(count, problems.length);
    const start = seed === 0 ? 0 : Math.abs(seed) % problems.length;
    return Array.from({ length: n }, (_, i) => {
      const payload = problems[(start + i) % problems.length]!;
      return { id: idOf(payload), split, payload };
    });
  };
}

/** The team of a text environment: its agents in order, one shared policy or one per role. */
export function textTeam(
  name: string,
  agents: readonly AgentId[],
  specialisation: Specialisation,
  turnOrder: TurnOrder,
  maxTurns: number,
): Team {
  const base = { name: `${name}-${specialisation}`, turnOrder, maxTurns };
  return specialisation === "shared" ? sharedPolicyTeam(base, agents) : perRoleTeam(base, agents);
}

/**
 * The environment with its registry name and a `reset` that checks a given task's payload against
 * the schema first (an API caller's task), failing with one line naming the field.
 */
export function checkedEnvironment<State, P>(
  name: string,
  env: Environment<State, P>,
  payload: z.ZodType<P>,
): Environment<unknown, unknown> {
  return {
    ...env,
    name,
    reset(task: Task<P>, seed: number) {
      const parsed = payload.safeParse(task.payload);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new Error(
          `${name} task ${task.id}: payload: ${issue.path.join(".") || "(root)"}: ${issue.message}`,
        );
      }
      return env.reset({ ...task, payload: parsed.data }, seed);
    },
  } as Environment<unknown, unknown>;
}
