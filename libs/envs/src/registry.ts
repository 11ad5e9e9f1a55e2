/**
 * The environments a recipe or a published team can name, each with how to make its tasks, its
 * default team and, where it has a solver, demonstrations for supervised warm starts.
 * The trainer (recipes) and the API (team manifests) both build environments through this one
 * registry, so a team is served with exactly the environment it was trained on.
 */
import type { AgentId, Environment, Split, Task, Team } from "@troupe/core";
import { envTeam } from "./games/episode.ts";
import { planPathEnv } from "./games/plan-path.ts";
import { sokobanEnv } from "./games/sokoban.ts";
import { sudokuEnv } from "./games/sudoku.ts";

export interface RegisteredEnvironment {
  readonly name: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly env: Environment<unknown, unknown>;
  /** `count` distinct tasks of a split; the same (split, seed) gives the same tasks. */
  generateTasks(split: Split, count: number, seed: number): Task<unknown>[];
  team(specialisation: "shared" | "per-role"): Team;
  /** The solver's next action for an agent, when the environment has a solver. */
  readonly demo?: (task: Task<unknown>, state: unknown, agent: AgentId) => string;
}

type GameFactory = typeof planPathEnv | typeof sokobanEnv | typeof sudokuEnv;

function gameEntry(name: string, factory: GameFactory) {
  return (options: Record<string, unknown>): RegisteredEnvironment => {
    const env = factory(options as never) as unknown as ReturnType<typeof planPathEnv>;
    return {
      name,
      options,
      env: env as unknown as Environment<unknown, unknown>,
      generateTasks: (split, count, seed) => env.generateTasks(split, count, { seed }) as Task<unknown>[],
      team: (specialisation) => envTeam(env, { policies: specialisation }),
      demo: (task, state, agent) => env.demo(task as never, state as never, agent),
    };
  };
}

export const ENVIRONMENTS: Readonly<
  Record<string, (options: Record<string, unknown>) => RegisteredEnvironment>
> = {
  "plan-path": gameEntry("plan-path", planPathEnv),
  sokoban: gameEntry("sokoban", sokobanEnv),
  sudoku: gameEntry("sudoku", sudokuEnv),
};

/** The environment's team with turn overrides (a recipe's or a team manifest's). */
export function configuredTeam(
  registered: RegisteredEnvironment,
  team: {
    readonly specialisation: "shared" | "per-role";
    readonly maxTurns?: number | undefined;
    readonly turnOrder?: "sequential" | "parallel" | undefined;
  },
): Team {
  const base = registered.team(team.specialisation);
  return { ...base, maxTurns: team.maxTurns ?? base.maxTurns, turnOrder: team.turnOrder ?? base.turnOrder };
}

/** Builds a registered environment; an unknown name fails naming the known ones. */
export function createEnvironment(name: string, options: Record<string, unknown>): RegisteredEnvironment {
  const factory = ENVIRONMENTS[name];
  if (!factory) {
    throw new Error(
      `environment.name: unknown environment "${name}" (known: ${Object.keys(ENVIRONMENTS).join(", ")})`,
    );
  }
  return factory(options);
}
