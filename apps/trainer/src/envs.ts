/**
 * The environments a recipe can name, each with how to make its tasks, its default team and,
 * where it has a solver, demonstrations for supervised warm starts.
 */
import type { AgentId, Environment, Split, Task, Team } from "@troupe/core";
import { envTeam, planPathEnv, sokobanEnv, sudokuEnv } from "@troupe/envs";

export interface TrainerEnvironment {
  readonly env: Environment<unknown, unknown>;
  /** `count` distinct tasks of a split; the same (split, seed) gives the same tasks. */
  generateTasks(split: Split, count: number, seed: number): Task<unknown>[];
  team(specialisation: "shared" | "per-role"): Team;
  /** The solver's next action for an agent, when the environment has a solver. */
  readonly demo?: (task: Task<unknown>, state: unknown, agent: AgentId) => string;
}

type GameFactory = typeof planPathEnv | typeof sokobanEnv | typeof sudokuEnv;

function gameEntry(factory: GameFactory) {
  return (options: Record<string, unknown>): TrainerEnvironment => {
    const env = factory(options as never) as unknown as ReturnType<typeof planPathEnv>;
    return {
      env: env as unknown as Environment<unknown, unknown>,
      generateTasks: (split, count, seed) => env.generateTasks(split, count, { seed }) as Task<unknown>[],
      team: (specialisation) => envTeam(env, { policies: specialisation }),
      demo: (task, state, agent) => env.demo(task as never, state as never, agent),
    };
  };
}

export const ENVIRONMENTS: Readonly<
  Record<string, (options: Record<string, unknown>) => TrainerEnvironment>
> = {
  "plan-path": gameEntry(planPathEnv),
  sokoban: gameEntry(sokobanEnv),
  sudoku: gameEntry(sudokuEnv),
};

/** The environment's team for a recipe: its specialisation, with the recipe's turn overrides. */
export function recipeTeam(
  trainerEnv: TrainerEnvironment,
  team: {
    readonly specialisation: "shared" | "per-role";
    readonly maxTurns?: number | undefined;
    readonly turnOrder?: "sequential" | "parallel" | undefined;
  },
): Team {
  const base = trainerEnv.team(team.specialisation);
  return { ...base, maxTurns: team.maxTurns ?? base.maxTurns, turnOrder: team.turnOrder ?? base.turnOrder };
}

export function createEnvironment(name: string, options: Record<string, unknown>): TrainerEnvironment {
  const factory = ENVIRONMENTS[name];
  if (!factory) {
    throw new Error(
      `recipe: environment.name: unknown environment "${name}" (known: ${Object.keys(ENVIRONMENTS).join(", ")})`,
    );
  }
  return factory(options);
}
