import { deriveSeed, userObservation } from "@troupe/core";
import { sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import type { RolloutNode } from "../src/rollout.ts";
import { chainTree, countLeaves, edgeNode, rootNode, TreeRollout } from "../src/tree.ts";
import { context, listPolicies, sumTask, twoAgentTeam } from "./helpers.ts";

const step = (teamReward: number, done: boolean, success?: boolean) => ({
  state: null,
  teamReward,
  localRewards: { a: 0, b: -0.5 },
  done,
  ...(success === undefined ? {} : { success }),
});

describe("rollout trees", () => {
  it("the root: no path, turn 0, no action, no reward, not done", () => {
    expect(rootNode()).toEqual({
      path: [],
      turn: 0,
      actions: {},
      teamReward: 0,
      localRewards: {},
      done: false,
      returns: {},
      children: [],
    });
  });

  it("an edge node carries the step's rewards and done, and success only when the step reports it", () => {
    const node = edgeNode([0, 1], 2, { a: "3" }, step(1, true, true), { a: 0.5 });
    expect(node).toEqual({
      path: [0, 1],
      turn: 2,
      actions: { a: "3" },
      teamReward: 1,
      localRewards: { a: 0, b: -0.5 },
      done: true,
      success: true,
      returns: { a: 0.5 },
      children: [],
    });
    const unknown = edgeNode([0], 0, { a: "1" }, step(0, false));
    expect("success" in unknown).toBe(false);
    expect(unknown.returns).toEqual({});
  });

  it("a chain: each step the only child of the previous, paths [0], [0,0], …", () => {
    const root = chainTree([
      { turn: 0, actions: { a: "1" }, result: step(0, false) },
      { turn: 1, actions: { a: "2" }, result: step(1, true, true) },
    ]);
    expect(root.path).toEqual([]);
    expect(root.children).toHaveLength(1);
    const first = root.children[0]!;
    expect(first.path).toEqual([0]);
    expect(first.actions).toEqual({ a: "1" });
    expect(first.children).toHaveLength(1);
    const second = first.children[0]!;
    expect(second.path).toEqual([0, 0]);
    expect(second.turn).toBe(1);
    expect(second.success).toBe(true);
    expect(second.children).toEqual([]);
    expect(countLeaves([root])).toBe(1);
    expect(countLeaves([chainTree([])])).toBe(1); // an empty episode is its root alone
  });

  it("leaves are counted over every tree", () => {
    const tree = (shape: number[]): RolloutNode => {
      const root = rootNode();
      shape.forEach((grandchildren, i) => {
        const child = edgeNode([i], 0, {}, step(0, grandchildren === 0));
        for (let j = 0; j < grandchildren; j++) child.children.push(edgeNode([i, j], 1, {}, step(0, true)));
        root.children.push(child);
      });
      return root;
    };
    // [2, 0, 3]: 2 + 1 + 3 leaves; [0]: one leaf child.
    expect(countLeaves([tree([2, 0, 3]), tree([0])])).toBe(7);
    expect(countLeaves([])).toBe(0);
  });
});

describe("TreeRollout", () => {
  const env = sumToTargetEnv(["a", "b"]);
  const task = sumTask(5);

  it("candidates of one state share its observation and are seeded at [...place, agent, k] in the strategy's stream", async () => {
    const ctx = context(env, listPolicies(["1", "2"], ["3", "4"]), twoAgentTeam("parallel", 2));
    const rollout = new TreeRollout(ctx, [task], "magrpo");
    const state = await rollout.reset(task);
    const requests = rollout.candidates(state, "b", 3, "t5", "node");
    expect(requests).toHaveLength(3);
    expect(requests.map((r) => r.agent)).toEqual(["b", "b", "b"]);
    for (const r of requests)
      expect(r.observation).toEqual(userObservation("You are b. Target 5. Total 0. Say one digit."));
    expect(requests.map((r) => r.seed)).toEqual(
      [0, 1, 2].map((k) => deriveSeed(ctx.seed, "magrpo", ctx.step, "t5", "node", "b", k)),
    );
    expect(new Set(requests.map((r) => r.seed)).size).toBe(3);
  });

  it("counts completions and environment steps, and leaves of the trees it reports", async () => {
    const ctx = context(env, listPolicies(["1", "2"], ["3", "4"]), twoAgentTeam("parallel", 2));
    const rollout = new TreeRollout(ctx, [task], "magrpo");
    const state = await rollout.reset(task);
    const outputs = await rollout.generate([
      ...rollout.candidates(state, "a", 2, "root"),
      ...rollout.candidates(state, "b", 2, "root"),
    ]);
    expect(outputs.map((c) => c.text)).toEqual(["1", "2", "3", "4"]);
    const next = await rollout.step(state, { a: "1", b: "3" });
    expect(next.teamReward).toBe(0); // total 4 < 5
    expect(next.done).toBe(false);
    const last = await rollout.step(next.state, { a: "1", b: "0" });
    expect(last.teamReward).toBe(1);
    expect(last.success).toBe(true);

    const root = chainTree([
      { turn: 0, actions: { a: "1", b: "3" }, result: next },
      { turn: 1, actions: { a: "1", b: "0" }, result: last },
    ]);
    const result = rollout.result([], [], [root, rootNode()]);
    expect(result.stats).toEqual({ completions: 4, envSteps: 2, leaves: 2 });
    expect(result.trees).toHaveLength(2);
  });

  it("samples carry the strategy's name as provenance", async () => {
    const ctx = context(env, listPolicies(["1"], ["2"]), twoAgentTeam("parallel", 1));
    const rollout = new TreeRollout(ctx, [task], "atgrpo");
    const state = await rollout.reset(task);
    const [request] = rollout.candidates(state, "a", 1, "root");
    const [completion] = await rollout.generate([request!]);
    const sample = rollout.sample({
      task,
      episode: 0,
      turn: 0,
      agent: "a",
      branch: [],
      candidate: 0,
      seed: request!.seed,
      observation: request!.observation,
      completion: completion!,
      reward: { team: 0, local: 0, total: 0 },
      return: 0,
      groupKey: "g",
    });
    expect(sample.provenance.strategy).toBe("atgrpo");
    expect(sample.provenance.agent).toBe("a");
    expect(sample.provenance.policyId).toBe("a");
    expect(sample.completionText).toBe("1");
    expect(sample.groupKey).toBe("g");
  });
});
