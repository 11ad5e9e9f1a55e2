/** What an environment tells the registry: dataset tasks by split and seed, text teams, checked resets. */
import { sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { checkedEnvironment, datasetTasks, defineEnvironment, textTeam } from "../src/entry.ts";

const problems = {
  train: Array.from({ length: 10 }, (_, i) => ({ id: `tr${i}` })),
  test: Array.from({ length: 4 }, (_, i) => ({ id: `te${i}` })),
};

describe("datasetTasks", () => {
  const tasks = datasetTasks(
    "toy",
    () => problems,
    (p) => p.id,
  );

  it("held-out splits at seed 0: the first `count` problems in file order; never more than the split", () => {
    expect(tasks("test", 3, 0).map((t) => t.id)).toEqual(["te0", "te1", "te2"]);
    expect(tasks("test", 100, 0).map((t) => t.id)).toEqual(["te0", "te1", "te2", "te3"]);
    expect(tasks("validation", 2, 0).map((t) => [t.id, t.split])).toEqual([
      ["te0", "validation"],
      ["te1", "validation"],
    ]);
  });

  it("train: a window of a fixed shuffle placed by the seed, the same for the same (split, seed)", () => {
    const all = tasks("train", 10, 0).map((t) => t.id);
    expect([...all].sort()).toEqual(problems.train.map((p) => p.id).sort()); // a permutation, no repeats
    expect(all).not.toEqual(problems.train.map((p) => p.id)); // shuffled
    expect(tasks("train", 10, 0).map((t) => t.id)).toEqual(all);
    // Seed s starts the window at |s| mod size and wraps around.
    expect(tasks("train", 4, 3).map((t) => t.id)).toEqual([all[3], all[4], all[5], all[6]]);
    expect(tasks("train", 3, -9).map((t) => t.id)).toEqual([all[9], all[0], all[1]]);
    expect(tasks("train", 3, 13).map((t) => t.id)).toEqual(tasks("train", 3, 3).map((t) => t.id));
    // Another dataset name, another shuffle.
    const other = datasetTasks(
      "other",
      () => problems,
      (p) => p.id,
    );
    expect(other("train", 10, 0).map((t) => t.id)).not.toEqual(all);
    for (const t of tasks("train", 2, 5))
      expect(t).toEqual({ id: t.payload.id, split: "train", payload: t.payload });
  });

  it("reads the splits once", () => {
    let reads = 0;
    const counted = datasetTasks(
      "toy",
      () => {
        reads++;
        return problems;
      },
      (p) => p.id,
    );
    counted("test", 1, 0);
    counted("test", 2, 0);
    counted("train", 2, 1);
    expect(reads).toBe(2); // once per split source
  });
});

describe("textTeam", () => {
  it("one shared policy, or one per role, named after the environment and the specialisation", () => {
    const shared = textTeam("math", ["reasoner", "tool"], "shared", "parallel", 3);
    expect(shared.name).toBe("math-shared");
    expect([shared.turnOrder, shared.maxTurns]).toEqual(["parallel", 3]);
    expect(new Set(shared.roles.map((r) => r.policy)).size).toBe(1);
    expect(shared.roles.map((r) => r.id)).toEqual(["reasoner", "tool"]);
    const perRole = textTeam("math", ["reasoner", "tool"], "per-role", "sequential", 1);
    expect(perRole.name).toBe("math-per-role");
    expect(perRole.roles).toEqual([
      { id: "reasoner", policy: "reasoner" },
      { id: "tool", policy: "tool" },
    ]);
  });
});

describe("checkedEnvironment", () => {
  it("renames the environment and checks a given task's payload first, naming the field", () => {
    const env = checkedEnvironment(
      "sum",
      sumToTargetEnv(["a", "b"]),
      z.object({ target: z.number().int().min(1) }),
    );
    expect(env.name).toBe("sum");
    expect(env.agents).toEqual(["a", "b"]);
    expect(env.reset({ id: "t", split: "test", payload: { target: 3 } }, 0)).toMatchObject({
      target: 3,
      total: 0,
    });
    expect(() => env.reset({ id: "t9", split: "test", payload: { target: 0 } }, 0)).toThrow(
      /^sum task t9: payload: target: /,
    );
    expect(() => env.reset({ id: "t9", split: "test", payload: null }, 0)).toThrow(
      /^sum task t9: payload: \(root\): /,
    );
  });

  it("defineEnvironment keeps the entry as it is", () => {
    const entry = { description: "d", options: z.strictObject({}), build: () => ({}) as never };
    expect(defineEnvironment(entry)).toBe(entry);
  });
});
