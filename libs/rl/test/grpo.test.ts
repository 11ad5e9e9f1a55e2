import { sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { rolloutGrpo } from "../src/grpo.ts";
import { overlapMeter } from "./concurrent-steps.ts";
import {
  context,
  estimated,
  ListPolicy,
  listPolicies,
  meanBaseline,
  sumTask,
  twoAgentTeam,
} from "./helpers.ts";

const env = sumToTargetEnv(["a", "b"]);

describe("GRPO rollouts (MAS without tree)", () => {
  it("G episodes per task, groups keyed (task, turn, agent), discounted returns", async () => {
    // One agent, target 3, G = 2 episodes, 2 turns, γ = 0.5. Episode e says ["1","2"][e] every turn.
    // e0: turn 0 → 1 (r 0), turn 1 → 2 (r 0). R_0 = 0, R_1 = 0.
    // e1: turn 0 → 2 (r 0), turn 1 → 4 (r −1, done). R_1 = −1, R_0 = 0 + 0.5·(−1) = −0.5.
    const solo = sumToTargetEnv(["a"]);
    const team = {
      name: "solo",
      turnOrder: "sequential" as const,
      maxTurns: 2,
      roles: [{ id: "a", policy: "p" }],
    };
    const config = { groupSize: 2, gamma: 0.5, teamWeight: 1, localWeight: 0 };
    const out = estimated(
      await rolloutGrpo(context(solo, { p: new ListPolicy("p", ["1", "2"]) }, team), [sumTask(3)], config),
      meanBaseline,
    );
    const turn = (t: number) => out.samples.filter((s) => s.provenance.turn === t);
    expect(turn(0).map((s) => [s.provenance.episode, s.return, s.advantage])).toEqual([
      [0, 0, 0.25],
      [1, -0.5, -0.25],
    ]);
    expect(turn(1).map((s) => [s.provenance.episode, s.return, s.advantage])).toEqual([
      [0, 0, 0.5],
      [1, -1, -0.5],
    ]);
    expect(new Set(out.samples.map((s) => s.groupKey)).size).toBe(2);
    expect(out.stats.leaves).toBe(2);
  });

  it("a sequential team: the second agent sees the first agent's action of the same turn", async () => {
    const ctx = context(env, listPolicies(["4"], ["1"]), twoAgentTeam("sequential", 1));
    const out = await rolloutGrpo(ctx, [sumTask(9)], {
      groupSize: 1,
      gamma: 1,
      teamWeight: 1,
      localWeight: 0,
    });
    const b = out.samples.find((s) => s.provenance.agent === "b")!;
    expect(b.observation.at(-1)!.content).toContain("Total 4.");
  });

  it("steps every live episode of a stage at once, with the results of one at a time", async () => {
    // Targets 3 and 4, G = 3: six episodes, each turn's stage steps all live ones together.
    const metered = overlapMeter(env);
    const policies = listPolicies(["1", "2", "3"], ["1", "2", "3"]);
    const config = { groupSize: 3, gamma: 1, teamWeight: 1, localWeight: 1 };
    const tasks = [sumTask(3), sumTask(4)];
    const out = await rolloutGrpo(context(metered.env, policies, twoAgentTeam("parallel", 2)), tasks, config);
    expect(metered.maxInFlight()).toBe(6);
    const plain = await rolloutGrpo(context(env, policies, twoAgentTeam("parallel", 2)), tasks, config);
    expect(out.samples).toEqual(plain.samples);
    expect(out.episodes).toEqual(plain.episodes);
  });
});
