import { describe, expect, it } from "vitest";
import { createEnvironment, recipeTeam } from "./envs.ts";
import { collectDemonstrations } from "./sft.ts";

// The tool-call team: the tool's output (a path, or "bad command: …") is part of the plan agent's
// observation, and a failed first turn brings a second one ("last: …").
const trainerEnv = createEnvironment("plan-path", {
  roles: "tool-call",
  maxTurns: 2,
  rows: 5,
  cols: 5,
  blockedFraction: 0.15,
  minPathLength: 3,
});
const team = recipeTeam(trainerEnv, { specialisation: "shared" });
const tasks = trainerEnv.generateTasks("train", 24, 7);
const text = (o: unknown) => JSON.stringify(o);

describe("collectDemonstrations", () => {
  it("targets the solver's actions, and without mistakes every maze ends in the first turn", async () => {
    const demos = await collectDemonstrations(trainerEnv, team, tasks, { mistakeRate: 0, seed: 1 });
    expect(demos.length).toBe(2 * tasks.length);
    expect(demos.filter((d) => d.agent === "tool").every((d) => /^path \d \d$/.test(d.target))).toBe(true);
    expect(demos.some((d) => text(d.observation).includes("last:"))).toBe(false);
  });

  it("slips only the listed roles: the plan agent's slips show second turns, never a corrupted tool call", async () => {
    const planOnly = await collectDemonstrations(trainerEnv, team, tasks, {
      mistakeRate: 1,
      seed: 1,
      mistakeRoles: ["plan"],
    });
    const planSeen = planOnly.filter((d) => d.agent === "plan").map((d) => text(d.observation));
    expect(planSeen.some((o) => o.includes("bad command"))).toBe(false);
    expect(planSeen.filter((o) => o.includes("last:")).length).toBeGreaterThan(tasks.length / 2);

    const everyRole = await collectDemonstrations(trainerEnv, team, tasks, { mistakeRate: 1, seed: 1 });
    const seen = everyRole.filter((d) => d.agent === "plan").map((d) => text(d.observation));
    expect(seen.some((o) => o.includes("bad command"))).toBe(true);
  });
});
