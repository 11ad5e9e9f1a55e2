import { createEnvironment } from "@troupe/envs/registry";
import { describe, expect, it } from "vitest";
import { GENERATED_TASK_CACHE_SIZE, generatedTask } from "../src/input.ts";

const planPath = () => createEnvironment("plan-path", { roles: "compact", rows: 4, cols: 4, maxTurns: 2 });

describe("generatedTask", () => {
  it("is the environment's task for (split, seed), generated once and then handed out again", () => {
    const registered = planPath();
    const first = generatedTask(registered, "test", 7);
    expect(first).toEqual(registered.generateTasks("test", 1, 7)[0]);
    expect(generatedTask(registered, "test", 7)).toBe(first); // the same object: not generated again
    expect(generatedTask(registered, "test", 8)).not.toEqual(first);
    expect(generatedTask(registered, "train", 7)).toEqual(registered.generateTasks("train", 1, 7)[0]);
    expect(generatedTask(registered, "train", 7).split).toBe("train");
  });

  it("keeps each environment's own tasks", () => {
    const small = planPath();
    const large = createEnvironment("plan-path", { roles: "compact", rows: 6, cols: 6, maxTurns: 2 });
    expect(generatedTask(small, "test", 1)).toEqual(small.generateTasks("test", 1, 1)[0]);
    expect(generatedTask(large, "test", 1)).toEqual(large.generateTasks("test", 1, 1)[0]);
    expect(generatedTask(large, "test", 1)).not.toEqual(generatedTask(small, "test", 1));
  });

  it("forgets the least recently used beyond GENERATED_TASK_CACHE_SIZE (generated again, equal)", () => {
    const registered = planPath();
    const oldest = generatedTask(registered, "test", 0);
    const recent = generatedTask(registered, "test", 1);
    for (let seed = 2; seed <= GENERATED_TASK_CACHE_SIZE; seed++) {
      if (seed % 1000 === 0) expect(generatedTask(registered, "test", 1)).toBe(recent); // used: kept
      generatedTask(registered, "test", seed);
    }
    // seed 0 was pushed out by the last one; seed 1, used along the way, was not.
    const again = generatedTask(registered, "test", 0);
    expect(again).not.toBe(oldest);
    expect(again).toEqual(oldest);
    expect(generatedTask(registered, "test", 1)).toBe(recent);
  });
});
