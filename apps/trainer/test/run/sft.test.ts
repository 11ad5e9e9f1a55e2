import { describe, expect, it } from "vitest";
import { createEnvironment, recipeTeam } from "../../src/envs.ts";
import { collectDemonstrations } from "../../src/run/sft.ts";

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

  it("cuts the listed roles' targets, teaches the cut text and runs it: the next turn continues", async () => {
    const cut = await collectDemonstrations(trainerEnv, team, tasks, {
      mistakeRate: 0,
      seed: 1,
      cut: { rate: 1, length: 2, roles: ["plan"] },
    });
    const plans = cut.filter((d) => d.agent === "plan");
    // Every plan of more than two moves is cut to two; the tool's calls are whole.
    expect(plans.every((d) => /^[UDLR]{1,2}$/.test(d.target))).toBe(true);
    expect(cut.filter((d) => d.agent === "tool").every((d) => /^path \d \d$/.test(d.target))).toBe(true);
    // Every maze's path has at least three moves, so each first turn is cut and a second one follows,
    // where the tool's path starts two moves further on.
    expect(plans.filter((d) => text(d.observation).includes("last:")).length).toBe(tasks.length);
    // The same seed with rate 0 is the plain demonstrator.
    const none = await collectDemonstrations(trainerEnv, team, tasks, {
      mistakeRate: 0,
      seed: 1,
      cut: { rate: 0, length: 2 },
    });
    const plain = await collectDemonstrations(trainerEnv, team, tasks, { mistakeRate: 0, seed: 1 });
    expect(none).toEqual(plain);
  });

  it("cuts about `rate` of the targets, and never a target already that short", async () => {
    const cut = await collectDemonstrations(trainerEnv, team, tasks, {
      mistakeRate: 0,
      seed: 2,
      cut: { rate: 0.5, length: 2, roles: ["plan"] },
    });
    const firstPlans = cut.filter((d) => d.agent === "plan" && !text(d.observation).includes("last:"));
    const cutShare = firstPlans.filter((d) => d.target.length === 2).length / firstPlans.length;
    expect(cutShare).toBeGreaterThan(0.2);
    expect(cutShare).toBeLessThan(0.8);
    const wholeTool = await collectDemonstrations(trainerEnv, team, tasks, {
      mistakeRate: 0,
      seed: 2,
      cut: { rate: 1, length: 20 },
    });
    expect(wholeTool).toEqual(
      await collectDemonstrations(trainerEnv, team, tasks, { mistakeRate: 0, seed: 2 }),
    );
  });
});
