import { ScriptedPolicy, sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { groupSamples } from "../src/grouping.ts";
import { defaultMagrpoConfig, type JointMode, jointActions, rolloutMagrpo } from "../src/magrpo.ts";
import { overlapMeter } from "./concurrent-steps.ts";
import { context, estimated, listPolicies, meanBaseline, sumTask, twoAgentTeam } from "./helpers.ts";

const env = sumToTargetEnv(["a", "b"]);

function defaultsFor(jointMode: JointMode) {
  return { ...defaultMagrpoConfig, jointMode };
}

describe("MAGRPO", () => {
  it("joint actions: aligned pairs indices, cross is the lexicographic Cartesian product", () => {
    expect(jointActions(2, 3, "aligned")).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
    ]);
    expect(jointActions(2, 2, "cross")).toEqual([
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
    ]);
    expect(jointActions(3, 2, "cross")).toHaveLength(8);
  });

  it("aligned, hand-worked two-turn tree: returns R = r + γ·mean(children), per-node groups", async () => {
    // Target 5, G = 2, γ = 0.5. Candidate g of a says ["1","2"][g], of b says ["1","3"][g].
    // Root (total 0): joint 0 = (1,1) → total 2, r = 0;  joint 1 = (2,3) → total 5, r = +1, done.
    // Node [0] (total 2): joint 0 → 4, r = 0;  joint 1 → 7, r = −1 (overshoot), done. Turn budget spent.
    // R at [0] = [0, −1]; R at root = [0 + 0.5·mean(0, −1), 1] = [−0.25, 1].
    const ctx = context(env, listPolicies(["1", "2"], ["1", "3"]), twoAgentTeam("parallel", 2));
    const config = {
      groupSize: 2,
      jointMode: "aligned" as const,
      gamma: 0.5,
      crossCredit: "sum" as const,
      teamWeight: 1,
      localWeight: 0,
    };
    const out = estimated(await rolloutMagrpo(ctx, [sumTask(5)], config), meanBaseline);
    expect(out.samples).toHaveLength(8); // (root + node [0]) × 2 agents × 2 candidates; node [1] is done
    expect(out.stats.leaves).toBe(3);
    const at = (path: string, agent: string) =>
      out.samples.filter((s) => s.provenance.branch.join(".") === path && s.provenance.agent === agent);
    expect(at("", "a").map((s) => s.return)).toEqual([-0.25, 1]);
    expect(at("", "a").map((s) => s.advantage)).toEqual([-0.625, 0.625]);
    expect(at("", "b").map((s) => s.advantage)).toEqual([-0.625, 0.625]);
    expect(at("0", "a").map((s) => s.return)).toEqual([0, -1]);
    expect(at("0", "a").map((s) => s.advantage)).toEqual([0.5, -0.5]);
    expect(at("0", "b")[0]!.completionText).toBe("1");
    expect(at("0", "b")[1]!.groupKey).toBe("sum-to-target/t5/turn=1/agent=b/node=0");
    expect(at("", "a")[0]!.groupKey).toBe("sum-to-target/t5/turn=0/agent=a/node=root");
    expect(out.trees[0]!.children[1]!.success).toBe(true);
    expect(out.trees[0]!.children[0]!.returns).toEqual({ a: -0.25, b: -0.25 });
  });

  it("cross mode: each completion is credited the sum (or mean) of the joint returns it took part in", async () => {
    // Target 4, G = 2, one turn. Joint (g_a, g_b): (0,0) 1+1=2 → 0; (0,1) 1+3=4 → +1; (1,0) 2+1=3 → 0; (1,1) 2+3=5 → −1.
    // a: g=0 → 0 + 1 = 1, g=1 → 0 − 1 = −1.   b: g=0 → 0 + 0 = 0, g=1 → 1 − 1 = 0.
    const policies = listPolicies(["1", "2"], ["1", "3"]);
    const base = {
      groupSize: 2,
      jointMode: "cross" as const,
      gamma: 0.9,
      teamWeight: 1,
      localWeight: 0,
    };
    const sum = estimated(
      await rolloutMagrpo(context(env, policies, twoAgentTeam("parallel", 1)), [sumTask(4)], {
        ...base,
        crossCredit: "sum",
      }),
      meanBaseline,
    );
    const by = (agent: string, out = sum) => out.samples.filter((s) => s.provenance.agent === agent);
    expect(by("a").map((s) => s.return)).toEqual([1, -1]);
    expect(by("a").map((s) => s.advantage)).toEqual([1, -1]);
    expect(by("b").map((s) => s.return)).toEqual([0, 0]);
    expect(by("b").map((s) => s.advantage)).toEqual([0, 0]);
    const meanCredit = await rolloutMagrpo(
      context(env, policies, twoAgentTeam("parallel", 1)),
      [sumTask(4)],
      {
        ...base,
        crossCredit: "mean",
      },
    );
    expect(meanCredit.samples.filter((s) => s.provenance.agent === "a").map((s) => s.return)).toEqual([
      0.5, -0.5,
    ]);
    expect(sum.stats.leaves).toBe(4);
  });

  it("tree sizes: G^T leaves aligned, G^{N·T} cross", async () => {
    // Target 1000 is never reached, so no branch ends early.
    const scripted = (id: string) =>
      new ScriptedPolicy(id, () => ["1", "2", "3"].map((text) => ({ text, weight: 1 })));
    const policies = { a: scripted("a"), b: scripted("b") };
    const aligned = await rolloutMagrpo(
      context(env, policies, twoAgentTeam("parallel", 3)),
      [sumTask(1000)],
      {
        ...defaultsFor("aligned"),
        groupSize: 2,
      },
    );
    expect(aligned.stats.leaves).toBe(2 ** 3);
    // Internal nodes 1 + 2 + 4, each with N·G = 4 samples.
    expect(aligned.samples).toHaveLength(7 * 4);
    const cross = await rolloutMagrpo(context(env, policies, twoAgentTeam("parallel", 2)), [sumTask(1000)], {
      ...defaultsFor("cross"),
      groupSize: 2,
    });
    expect(cross.stats.leaves).toBe(2 ** (2 * 2));
    expect(cross.samples).toHaveLength((1 + 4) * 4);
    for (const members of groupSamples(cross.samples).values()) expect(members).toHaveLength(2);
  });

  it("early termination: a node whose mean reward exceeds the threshold is not expanded", async () => {
    // As the hand-worked tree: root mean reward = mean(0, 1) = 0.5 > 0.4, so node [0] stays a leaf.
    const ctx = context(env, listPolicies(["1", "2"], ["1", "3"]), twoAgentTeam("parallel", 2));
    const out = await rolloutMagrpo(ctx, [sumTask(5)], {
      ...defaultsFor("aligned"),
      groupSize: 2,
      gamma: 0.5,
      earlyTerminationThreshold: 0.4,
    });
    expect(out.samples).toHaveLength(4);
    expect(out.stats.leaves).toBe(2);
    const higher = await rolloutMagrpo(ctx, [sumTask(5)], {
      ...defaultsFor("aligned"),
      groupSize: 2,
      earlyTerminationThreshold: 0.5,
    });
    expect(higher.samples).toHaveLength(8); // 0.5 does not exceed 0.5
  });

  it("refuses sequential teams and groups of one", async () => {
    const policies = listPolicies(["1"], ["1"]);
    await expect(
      rolloutMagrpo(context(env, policies, twoAgentTeam("sequential", 1)), [sumTask(3)]),
    ).rejects.toThrow(/sequentially.*parallel/);
    await expect(
      rolloutMagrpo(context(env, policies, twoAgentTeam("parallel", 1)), [sumTask(3)], {
        ...defaultsFor("aligned"),
        groupSize: 1,
      }),
    ).rejects.toThrow(/groupSize/);
  });

  it("steps every joint action of every open node of a depth at once, with the results of one at a time", async () => {
    // Cross mode, G = 2, two tasks never finished: depth 1 has 2 tasks × 4 joints = 8 open nodes,
    // each stepping its 4 joint actions: 32 steps together.
    const metered = overlapMeter(env);
    const scripted = (id: string) =>
      new ScriptedPolicy(id, () => ["1", "2"].map((text) => ({ text, weight: 1 })));
    const policies = { a: scripted("a"), b: scripted("b") };
    const config = { ...defaultsFor("cross"), groupSize: 2 };
    const tasks = [sumTask(1000), sumTask(999)];
    const team = twoAgentTeam("parallel", 2);
    const out = await rolloutMagrpo(context(metered.env, policies, team), tasks, config);
    expect(metered.maxInFlight()).toBe(32);
    const plain = await rolloutMagrpo(context(env, policies, team), tasks, config);
    expect(out.samples).toEqual(plain.samples);
    expect(out.stats).toEqual(plain.stats);
  });
});
