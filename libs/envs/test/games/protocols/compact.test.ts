/** The compact protocol's agents and prompts, on the hand 4×4 Plan-Path. */
import { describe, expect, it } from "vitest";
import {
  compactObservation,
  compactProtocol,
  PlanPathRewardsSchema,
  planPathEnv,
  planPathGame,
} from "../../../src/games/index.ts";
import { puzzle, task } from "../hand-4x4.ts";
import { stepSync } from "../step-sync.ts";

const game = planPathGame(PlanPathRewardsSchema.parse({}), { rows: 4, cols: 4 } as never);

describe("the compact protocol", () => {
  it("planner then fixer, both may plan in one step, synchronous", () => {
    expect(compactProtocol).toMatchObject({
      roles: "compact",
      agents: ["planner", "fixer"],
      planners: 2,
      async: false,
    });
  });

  it("the prompt: name and role, the board, the hints, the report, the cue", () => {
    const env = planPathEnv();
    const after = stepSync(env, env.reset(task, 0), { planner: "R" }).state;
    expect(compactObservation(game, after, "fixer", ["position"]).messages).toEqual([
      {
        role: "user",
        content: "path fixer\n.A#.\n.#..\n...#\n#..G\nat 0,1 goal 3,3\nlast: R: not solved, at (0,1)\nfix:",
      },
    ]);
    expect(compactObservation(game, after, "planner", ["position"], "first").messages[0]!.content).toBe(
      "path planner\nlast: R: not solved, at (0,1)\n.A#.\n.#..\n...#\n#..G\nat 0,1 goal 3,3\nplan:",
    );
    const start = env.reset(task, 0);
    expect(compactObservation(game, start, "tool").messages[0]!.content).toBe(
      "path tool\nA.#.\n.#..\n...#\n#..G\ncall:",
    );
    expect(puzzle.goal).toEqual([3, 3]);
  });
});
