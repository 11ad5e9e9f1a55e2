/** The `single` protocol: the planner alone, re-planning from its own report (on the hand 4×4 Plan-Path). */
import { describe, expect, it } from "vitest";
import { planPathEnv, singleProtocol } from "../../../src/games/index.ts";
import { task } from "../hand-4x4.ts";
import { stepSync } from "../step-sync.ts";

it("is the compact protocol with the planner alone: one plan per step, synchronous", () => {
  expect(singleProtocol).toMatchObject({
    roles: "single",
    agents: ["planner"],
    planners: 1,
    compact: true,
    async: false,
  });
});

describe("plan-path single-agent baseline (roles: single)", () => {
  const env = planPathEnv({ roles: "single", maxTurns: 2 });

  it("has the planner alone; each planner step is a turn; it re-plans from its own report", () => {
    expect(env.agents).toEqual(["planner"]);
    const first = stepSync(env, env.reset(task, 0), { planner: "DDRRRR" });
    // D, D, R, R executed: the fifth move R from (2,2) is blocked by (2,3) = "#"; the report names where it stopped.
    expect(first.state.turn).toBe(1);
    expect(first.done).toBe(false);
    expect(first.state.report).toBe("DDRRRR: blocked at step 5 (2,2)");
    const prompt = env.observe(first.state, "planner");
    expect(prompt.messages.at(-1)!.content).toContain("last: DDRRRR: blocked at step 5 (2,2)");
    const second = stepSync(env, first.state, { planner: "DR" });
    expect(second.success).toBe(true);
    expect(second.state.turn).toBe(2);
  });

  it("ends after maxTurns planner turns with the failure penalty", () => {
    const first = stepSync(env, env.reset(task, 0), { planner: "D" });
    const second = stepSync(env, first.state, { planner: "D" });
    expect(second.done).toBe(true);
    expect(second.success).toBe(false);
    expect(second.info?.failure).toBe("out of turns");
  });

  it("refuses the fixer", () => {
    expect(() => env.step(env.reset(task, 0), { fixer: "D" })).toThrow(
      /unknown agent "fixer"; agents: planner/,
    );
  });
});
