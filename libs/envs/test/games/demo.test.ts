/** The solver's demonstrations per role and protocol, and the errors of a demo asked out of place. */
import { describe, expect, it } from "vitest";
import { gameDemo, PlanPathRewardsSchema, planPathEnv, planPathGame } from "../../src/games/index.ts";
import { task } from "./hand-4x4.ts";
import { stepSync } from "./step-sync.ts";

const game = planPathGame(PlanPathRewardsSchema.parse({}), { rows: 4, cols: 4 } as never);
const env = planPathEnv();
const start = env.reset(task, 0);

describe("gameDemo", () => {
  it("the optimal plan: alone for planner and fixer, after #### for plan, a Python solver for tool", () => {
    expect(gameDemo(game, task, start, "planner")).toBe("DDRDRR");
    expect(gameDemo(game, task, start, "fixer", 3)).toBe("DDR");
    expect(gameDemo(game, task, start, "plan")).toBe("#### DDRDRR");
    expect(gameDemo(game, task, start, "tool")).toBe(`\`\`\`python\n${game.toolSolverCode}\`\`\``);
  });

  it('with roles "tool-call": the tool\'s command, and the plan alone', () => {
    expect(gameDemo(game, task, start, "tool", 64, "tool-call")).toBe("path 3 3");
    expect(gameDemo(game, task, start, "plan", 64, "tool-call")).toBe("DDRDRR");
  });

  it("refuses another task's state, a finished episode and an unknown agent, naming them", () => {
    const other = { ...task, id: "other", payload: { ...task.payload, goal: [2, 2] as const } };
    expect(() => gameDemo(game, other, start, "planner")).toThrow(
      "plan-path demo: state is not an episode of task other",
    );
    const done = stepSync(env, start, { planner: "DDRDRR" }).state;
    expect(() => gameDemo(game, task, done, "planner")).toThrow(
      "plan-path demo: the episode of task hand-4x4 is over",
    );
    expect(() => gameDemo(game, task, start, "critic")).toThrow('plan-path demo: unknown agent "critic"');
  });
});
