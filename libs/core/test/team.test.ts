import { describe, expect, it } from "vitest";
import { checkTeam, perRoleTeam, roleOf, sharedPolicyTeam, teamPolicies, turnStages } from "../src/team.ts";
import { sumToTargetEnv } from "../src/toy.ts";

describe("teams", () => {
  const env = sumToTargetEnv(["a", "b"]);
  it("turn stages: sequential → one agent per stage, parallel → one stage", () => {
    const roles = [
      { id: "a", policy: "p" },
      { id: "b", policy: "p" },
    ];
    expect(turnStages({ name: "t", roles, turnOrder: "sequential", maxTurns: 1 })).toEqual([["a"], ["b"]]);
    expect(turnStages({ name: "t", roles, turnOrder: "parallel", maxTurns: 1 })).toEqual([["a", "b"]]);
  });

  /** A parallel one-turn team with these roles, each as `id:policy`. */
  const teamOf = (...roles: string[]) => ({
    name: "t",
    roles: roles.map((role) => ({ id: role.split(":")[0]!, policy: role.split(":")[1]! })),
    turnOrder: "parallel" as const,
    maxTurns: 1,
  });

  it.each([
    { roles: ["a:p"], error: /missing roles: b/ },
    { roles: ["a:p", "b:p", "c:p"], error: /unknown roles: c/ },
    { roles: ["a:p", "a:q"], error: /roles\.1\.id: duplicate role id "a"/ },
  ])("checkTeam names what is wrong with roles $roles", ({ roles, error }) => {
    expect(() => checkTeam(teamOf(...roles), env)).toThrow(error);
  });

  it("checkTeam refuses a team without roles", () => {
    expect(() => checkTeam({ ...teamOf(), maxTurns: 0 }, env)).toThrow(/roles/);
  });

  it("teamPolicies lists each policy once, in first-use order", () => {
    expect(teamPolicies(teamOf("a:q", "b:p", "c:q"))).toEqual(["q", "p"]);
  });

  it("roleOf finds a role by agent and names a missing one", () => {
    expect(roleOf(teamOf("a:p", "b:q"), "b")).toEqual({ id: "b", policy: "q" });
    expect(() => roleOf(teamOf("a:p"), "z")).toThrow('team "t" has no role "z"');
  });

  it("shared and per-role teams", () => {
    const base = { name: "t", turnOrder: "sequential" as const, maxTurns: 2 };
    expect(sharedPolicyTeam(base, ["a", "b"]).roles).toEqual([
      { id: "a", policy: "shared" },
      { id: "b", policy: "shared" },
    ]);
    expect(sharedPolicyTeam(base, ["a"], "p").roles).toEqual([{ id: "a", policy: "p" }]);
    expect(perRoleTeam(base, ["a", "b"])).toEqual({
      ...base,
      roles: [
        { id: "a", policy: "a" },
        { id: "b", policy: "b" },
      ],
    });
  });

  it("checkTeam returns a fitting team as it is", () => {
    const team = teamOf("a:p", "b:q");
    expect(checkTeam(team, env)).toBe(team);
  });
});
