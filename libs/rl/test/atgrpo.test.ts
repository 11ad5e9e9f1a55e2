/**
 * AT-GRPO (atgrpo.ts) on a hand-worked turn: K candidates from one state grouped by (task, turn,
 * agent), rewards α·team + local, the best candidate continuing, ties broken by the seed.
 */
import { Rng } from "@troupe/core";
import { sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { rolloutAtgrpo, selectCandidate } from "../src/atgrpo.ts";
import { overlapMeter } from "./concurrent-steps.ts";
import { context, estimated, listPolicies, sumTask, twoAgentTeam } from "./helpers.ts";

const env = sumToTargetEnv(["a", "b"]);

describe("AT-GRPO", () => {
  /** K = 2, α = 1, local weight 1, argmax selection, std-normalised advantages. */
  const handAtgrpo = {
    candidates: 2,
    teamWeight: 1,
    localWeight: 1,
    selection: "argmax" as const,
    selectionTemperature: 1,
  };
  const stdNormalised = (filters: { dropZeroVariance: boolean; dropLowestMeanFraction: number }) => ({
    baseline: "mean",
    normalizeStd: true,
    eps: 1e-6,
    filters,
  });

  it("hand-worked turn: K candidates from one state, α·team + local, argmax continues, later agents see it", async () => {
    // Target 3, K = 2, α = 1. a says ["1","x"]: "1" → total 1, r = 0; "x" is not a digit → local −0.5, r = −0.5.
    // A_a = (r − mean)/std = (±0.25)/0.25 = [1, −1]; argmax → "1" continues (total 1).
    // b at total 1 says ["2","5"]: "2" → 3 = target, team +1, r = 1; "5" → 6 > 3, team −1, r = −1. A_b = [1, −1].
    const ctx = context(env, listPolicies(["1", "x"], ["2", "5"]), twoAgentTeam("sequential", 3));
    const out = estimated(
      await rolloutAtgrpo(ctx, [sumTask(3)], handAtgrpo),
      stdNormalised({ dropZeroVariance: false, dropLowestMeanFraction: 0 }),
    );
    expect(out.samples).toHaveLength(4); // the episode ends after b's turn-0 action
    const [a0, a1, b0, b1] = out.samples;
    expect([a0!.reward.total, a1!.reward.total]).toEqual([0, -0.5]);
    // (r − mean) / (σ + ε): mean −0.25, population σ 0.25 (ε = 0 is refused).
    expect([a0!.advantage, a1!.advantage]).toEqual([0.25 / (0.25 + 1e-6), -0.25 / (0.25 + 1e-6)]);
    expect(a1!.reward).toEqual({ team: 0, local: -0.5, total: -0.5 });
    expect([b0!.reward.total, b1!.reward.total]).toEqual([1, -1]);
    expect([b0!.advantage, b1!.advantage]).toEqual([1 / (1 + 1e-6), -1 / (1 + 1e-6)]);
    // b saw a's chosen candidate: the total is 1.
    expect(b0!.observation.at(-1)!.content).toContain("Total 1.");
    expect(b0!.groupKey).toBe("sum-to-target/t3/turn=0/agent=b");
    expect(a0!.groupKey).toBe("sum-to-target/t3/turn=0/agent=a");
    expect(b0!.provenance.branch).toEqual([0]);
    expect(out.episodes).toEqual([{ taskId: "t3", episode: 0, success: true, teamReturn: 1, turns: 1 }]);
  });

  it("groups by (task, turn, agent) and continues each task's episode from its best candidate", async () => {
    // Targets 3 and 4, K = 2, two turns, a says ["1","x"], b says ["1","x"] (every request alike).
    // Turn 0: a's "1" (r = 0) beats "x" (local −0.5) and continues; b's "1" → total 2 (r = 0) continues.
    // Turn 1 for t3: a's "1" → 3 = target (team +1): the episode ends there, b does not act.
    // Turn 1 for t4: a's "1" → 3 (r = 0) continues; b's "1" → 4 = target (team +1).
    const ctx = context(env, listPolicies(["1", "x"], ["1", "x"]), twoAgentTeam("sequential", 2));
    const out = await rolloutAtgrpo(ctx, [sumTask(3), sumTask(4)], handAtgrpo);
    const keys = [...new Set(out.samples.map((s) => s.groupKey))].sort();
    expect(keys).toEqual([
      "sum-to-target/t3/turn=0/agent=a",
      "sum-to-target/t3/turn=0/agent=b",
      "sum-to-target/t3/turn=1/agent=a",
      "sum-to-target/t4/turn=0/agent=a",
      "sum-to-target/t4/turn=0/agent=b",
      "sum-to-target/t4/turn=1/agent=a",
      "sum-to-target/t4/turn=1/agent=b",
    ]);
    // Every group holds the K candidates of one state; the chosen one (index 0, "1") carries on.
    for (const key of keys) {
      const group = out.samples.filter((s) => s.groupKey === key);
      expect(group.map((s) => s.completionText)).toEqual(["1", "x"]);
      expect(group.map((s) => s.provenance.candidate)).toEqual([0, 1]);
    }
    const branchOf = (key: string) => out.samples.find((s) => s.groupKey === key)!.provenance.branch;
    expect(branchOf("sum-to-target/t4/turn=1/agent=b")).toEqual([0, 0, 0]);
    expect(out.episodes).toEqual([
      { taskId: "t3", episode: 0, success: true, teamReturn: 1, turns: 2 },
      { taskId: "t4", episode: 0, success: true, teamReturn: 1, turns: 2 },
    ]);
  });

  it("a parallel team: both agents answer the same state, their k-th candidates step as the k-th joint action", async () => {
    // Target 3, K = 2, parallel, α = 1. a says ["1","x"], b says ["2","5"]: joint 0 = {a:"1", b:"2"}
    // → total 3 = target (team +1): r_a0 = 1 + 0, r_b0 = 1 + 0; joint 1 = {a:"x", b:"5"} → total 5 > 3
    // (team −1): r_a1 = −1 − 0.5, r_b1 = −1 + 0. Joint 0 has the larger Σ r (2 against −2.5), continues
    // and ends the episode in one turn: one step of the environment with both agents' answers.
    const ctx = context(env, listPolicies(["1", "x"], ["2", "5"]), twoAgentTeam("parallel", 3));
    const out = await rolloutAtgrpo(ctx, [sumTask(3)], handAtgrpo);
    expect(out.samples.map((s) => [s.provenance.agent, s.provenance.candidate, s.completionText])).toEqual([
      ["a", 0, "1"],
      ["a", 1, "x"],
      ["b", 0, "2"],
      ["b", 1, "5"],
    ]);
    expect(out.samples.map((s) => s.reward)).toEqual([
      { team: 1, local: 0, total: 1 },
      { team: -1, local: -0.5, total: -1.5 },
      { team: 1, local: 0, total: 1 },
      { team: -1, local: 0, total: -1 },
    ]);
    // Both observed the initial state (nothing said yet), and each agent's K make one group.
    for (const sample of out.samples) expect(sample.observation.at(-1)!.content).toContain("Total 0. Say");
    expect([...new Set(out.samples.map((s) => s.groupKey))]).toEqual([
      "sum-to-target/t3/turn=0/agent=a",
      "sum-to-target/t3/turn=0/agent=b",
    ]);
    expect(out.trees[0]!.children.map((c) => c.actions)).toEqual([
      { a: "1", b: "2" },
      { a: "x", b: "5" },
    ]);
    expect(out.episodes).toEqual([{ taskId: "t3", episode: 0, success: true, teamReturn: 1, turns: 1 }]);

    // Target 5: no joint action hits it in turn 0, so turn 1 starts from the
    // chosen joint's state, with both agents again answering that same state.
    const two = await rolloutAtgrpo(
      context(env, listPolicies(["1", "x"], ["1", "x"]), twoAgentTeam("parallel", 2)),
      [sumTask(5)],
      handAtgrpo,
    );
    // Turn 0: {1,1} → total 2 (r = 0 each), {x,x} → total 0 (r = −0.5 each): {1,1} continues.
    // Turn 1: {1,1} → 4 (r = 0), {x,x} → 2: neither hits 5; 2 turns at most, so it ends unsolved.
    const turn1 = two.samples.filter((s) => s.provenance.turn === 1);
    expect(turn1.map((s) => s.provenance.agent)).toEqual(["a", "a", "b", "b"]);
    for (const sample of turn1) expect(sample.observation.at(-1)!.content).toContain("Total 2.");
    expect(two.episodes).toEqual([{ taskId: "t5", episode: 0, success: false, teamReturn: 0, turns: 2 }]);
  });

  it("ties are broken by the seed, not always towards the first candidate", () => {
    const picks = new Set<number>();
    for (let seed = 0; seed < 64; seed++)
      picks.add(selectCandidate([1, 1, 0, 1], "argmax", 1, new Rng(seed)));
    expect([...picks].sort()).toEqual([0, 1, 3]);
    // "sample" mode: p ∝ exp(r/τ); a very low τ behaves like argmax.
    expect(selectCandidate([0, 5, 1], "sample", 0.01, new Rng(3))).toBe(1);
  });

  it("group filters drop zero-variance groups", async () => {
    const ctx = context(env, listPolicies(["1", "1"], ["2", "5"]), twoAgentTeam("sequential", 1));
    const out = estimated(
      await rolloutAtgrpo(ctx, [sumTask(3)], handAtgrpo),
      stdNormalised({ dropZeroVariance: true, dropLowestMeanFraction: 0 }),
    );
    expect(out.samples.map((s) => s.provenance.agent)).toEqual(["b", "b"]);
  });

  it("steps the K candidates of every live episode at once, with the results of one at a time", async () => {
    // Two tasks, K = 3: each agent's turn steps 2 × 3 candidates together.
    const metered = overlapMeter(env);
    const policies = listPolicies(["1", "2", "x"], ["1", "2", "x"]);
    const config = { ...handAtgrpo, candidates: 3 };
    const tasks = [sumTask(5), sumTask(6)];
    const out = await rolloutAtgrpo(
      context(metered.env, policies, twoAgentTeam("sequential", 2)),
      tasks,
      config,
    );
    expect(metered.maxInFlight()).toBe(6);
    const plain = await rolloutAtgrpo(context(env, policies, twoAgentTeam("sequential", 2)), tasks, config);
    expect(out.samples).toEqual(plain.samples);
    expect(out.episodes).toEqual(plain.episodes);
  });
});
