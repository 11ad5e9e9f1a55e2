import { describe, expect, it } from "vitest";
import { envTeam, planPathEnv } from "../../src/games/index.ts";

describe("envTeam", () => {
  it("the protocol's roles in turn order, one shared policy, the environment's turns", () => {
    expect(envTeam(planPathEnv({ maxTurns: 3 }))).toEqual({
      name: "plan-path-compact",
      roles: [
        { id: "planner", policy: "shared", description: "proposes a plan from the board (compact protocol)" },
        {
          id: "fixer",
          policy: "shared",
          description: "corrects the plan after the environment reports where it failed (compact protocol)",
        },
      ],
      turnOrder: "sequential",
      maxTurns: 3,
    });
  });

  it("per-role policies named after the roles, and each protocol's own descriptions", () => {
    const team = envTeam(planPathEnv({ roles: "tool-call" }), { policies: "per-role", name: "pp" });
    expect(team.name).toBe("pp");
    expect(team.roles.map((r) => [r.id, r.policy])).toEqual([
      ["tool", "tool"],
      ["plan", "plan"],
    ]);
    expect(team.roles[0]!.description).toMatch(/^calls the environment's tool/);
  });
});
