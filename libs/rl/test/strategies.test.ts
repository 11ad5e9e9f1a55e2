import { canonicalJson, type Environment, Rng, stableHash, type Task } from "@troupe/core";
import { ScriptedPolicy, type SumToTargetState, sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { rolloutAtgrpo, selectCandidate } from "../src/atgrpo.ts";
import { groupSamples } from "../src/grouping.ts";
import { jointActions, rolloutMagrpo } from "../src/magrpo.ts";
import { rolloutParallel } from "../src/parallel.ts";
import { context, estimated, ListPolicy, listPolicies, twoAgentTeam } from "./helpers.ts";

const env = sumToTargetEnv(["a", "b"]);
const task = (target: number, id = `t${target}`): Task<{ target: number }> => ({
  id,
  split: "train",
  payload: { target },
});
const noStd = { baseline: "mean" as const, normalizeStd: false, eps: 0 };

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
    const out = estimated(await rolloutMagrpo(ctx, [task(5)], config), noStd);
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
      await rolloutMagrpo(context(env, policies, twoAgentTeam("parallel", 1)), [task(4)], {
        ...base,
        crossCredit: "sum",
      }),
      noStd,
    );
    const by = (agent: string, out = sum) => out.samples.filter((s) => s.provenance.agent === agent);
    expect(by("a").map((s) => s.return)).toEqual([1, -1]);
    expect(by("a").map((s) => s.advantage)).toEqual([1, -1]);
    expect(by("b").map((s) => s.return)).toEqual([0, 0]);
    expect(by("b").map((s) => s.advantage)).toEqual([0, 0]);
    const meanCredit = await rolloutMagrpo(context(env, policies, twoAgentTeam("parallel", 1)), [task(4)], {
      ...base,
      crossCredit: "mean",
    });
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
    const aligned = await rolloutMagrpo(context(env, policies, twoAgentTeam("parallel", 3)), [task(1000)], {
      ...defaultsFor("aligned"),
      groupSize: 2,
    });
    expect(aligned.stats.leaves).toBe(2 ** 3);
    // Internal nodes 1 + 2 + 4, each with N·G = 4 samples.
    expect(aligned.samples).toHaveLength(7 * 4);
    const cross = await rolloutMagrpo(context(env, policies, twoAgentTeam("parallel", 2)), [task(1000)], {
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
    const out = await rolloutMagrpo(ctx, [task(5)], {
      ...defaultsFor("aligned"),
      groupSize: 2,
      gamma: 0.5,
      earlyTerminationThreshold: 0.4,
    });
    expect(out.samples).toHaveLength(4);
    expect(out.stats.leaves).toBe(2);
    const higher = await rolloutMagrpo(ctx, [task(5)], {
      ...defaultsFor("aligned"),
      groupSize: 2,
      earlyTerminationThreshold: 0.5,
    });
    expect(higher.samples).toHaveLength(8); // 0.5 does not exceed 0.5
  });

  it("refuses sequential teams and groups of one", async () => {
    const policies = listPolicies(["1"], ["1"]);
    await expect(
      rolloutMagrpo(context(env, policies, twoAgentTeam("sequential", 1)), [task(3)]),
    ).rejects.toThrow(/sequentially.*parallel/);
    await expect(
      rolloutMagrpo(context(env, policies, twoAgentTeam("parallel", 1)), [task(3)], {
        ...defaultsFor("aligned"),
        groupSize: 1,
      }),
    ).rejects.toThrow(/groupSize/);
  });
});

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
      await rolloutAtgrpo(ctx, [task(3)], handAtgrpo),
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
      await rolloutAtgrpo(ctx, [task(3)], handAtgrpo),
      stdNormalised({ dropZeroVariance: true, dropLowestMeanFraction: 0 }),
    );
    expect(out.samples.map((s) => s.provenance.agent)).toEqual(["b", "b"]);
  });
});

describe("parallel rollouts (GRPO / MAS without tree)", () => {
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
      await rolloutParallel(context(solo, { p: new ListPolicy("p", ["1", "2"]) }, team), [task(3)], config),
      noStd,
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
    const out = await rolloutParallel(ctx, [task(9)], {
      groupSize: 1,
      gamma: 1,
      teamWeight: 1,
      localWeight: 0,
    });
    const b = out.samples.find((s) => s.provenance.agent === "b")!;
    expect(b.observation.at(-1)!.content).toContain("Total 4.");
  });
});

describe("determinism and isolation", () => {
  const randomPolicies = () => ({
    a: new ScriptedPolicy("a", () => ["1", "2", "3", "4"].map((text, i) => ({ text, weight: i + 1 }))),
    b: new ScriptedPolicy("b", () => ["1", "5", "x"].map((text, i) => ({ text, weight: 3 - i }))),
  });

  it("the same seed gives the same rollouts byte for byte; another seed does not", async () => {
    const run = async (seed: number) => {
      const magrpo = await rolloutMagrpo(
        context(env, randomPolicies(), twoAgentTeam("parallel", 2), { seed }),
        [task(7), task(9)],
      );
      const atgrpo = await rolloutAtgrpo(
        context(env, randomPolicies(), twoAgentTeam("sequential", 3), { seed }),
        [task(7)],
      );
      const parallel = await rolloutParallel(
        context(env, randomPolicies(), twoAgentTeam("sequential", 2), { seed }),
        [task(7)],
      );
      return canonicalJson([magrpo, atgrpo, parallel]);
    };
    const first = await run(7);
    expect(await run(7)).toBe(first);
    expect(await run(8)).not.toBe(first);
  });

  it("batching does not change a task's rollout (seeds come from the task, not the batch position)", async () => {
    const alone = await rolloutAtgrpo(context(env, randomPolicies(), twoAgentTeam("sequential", 3)), [
      task(9),
    ]);
    const batched = await rolloutAtgrpo(context(env, randomPolicies(), twoAgentTeam("sequential", 3)), [
      task(7),
      task(9),
    ]);
    const of = (r: typeof alone) => canonicalJson(r.samples.filter((s) => s.provenance.taskId === "t9"));
    expect(of(batched)).toBe(of(alone));
  });

  it("a step that mutates its input state throws instead of leaking into sibling branches", async () => {
    const leaky: Environment<SumToTargetState, { target: number }> = {
      ...env,
      step(state, actions) {
        const result = env.step(state, actions) as ReturnType<typeof env.step> & { state: SumToTargetState };
        (state.history as string[]).push("mutated"); // forbidden
        return result;
      },
    };
    const ctx = context(leaky, randomPolicies(), twoAgentTeam("parallel", 2));
    await expect(rolloutMagrpo(ctx, [task(9)])).rejects.toThrow(TypeError);
  });

  it("sibling states are never changed by stepping other branches (hash check, freezing off)", async () => {
    const created: { state: SumToTargetState; hash: string }[] = [];
    const recording: Environment<SumToTargetState, { target: number }> = {
      ...env,
      async step(state, actions) {
        const result = await env.step(state, actions);
        created.push({ state: result.state, hash: stableHash(result.state) });
        return result;
      },
    };
    const ctx = context(recording, randomPolicies(), twoAgentTeam("parallel", 3), { freezeStates: false });
    await rolloutMagrpo(ctx, [task(20)], { ...defaultsFor("cross"), groupSize: 2 });
    expect(created.length).toBe(4 + 16 + 64);
    for (const { state, hash } of created) expect(stableHash(state)).toBe(hash);
  });

  it("rejects a batch with a repeated task and a role without a policy", async () => {
    await expect(
      rolloutAtgrpo(context(env, randomPolicies(), twoAgentTeam("sequential", 1)), [task(3), task(3)]),
    ).rejects.toThrow(/appears twice/);
    await expect(
      rolloutAtgrpo(context(env, { a: randomPolicies().a }, twoAgentTeam("sequential", 1)), [task(3)]),
    ).rejects.toThrow(/policy "b"/);
  });
});

import { defaultMagrpoConfig, type JointMode } from "../src/magrpo.ts";

function defaultsFor(jointMode: JointMode) {
  return { ...defaultMagrpoConfig, jointMode };
}
