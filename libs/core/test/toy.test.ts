import { describe, expect, it } from "vitest";
import { sumToTargetEnv } from "../src/toy.ts";

describe("sum-to-target toy environment", () => {
  const env = sumToTargetEnv(["a", "b"]);
  const task = { id: "t", split: "train" as const, payload: { target: 5 } };

  it("exact rewards: hit, overshoot, invalid", async () => {
    const s0 = await env.reset(task, 0);
    const s1 = await env.step(s0, { a: "2", b: "hello" });
    expect(s1).toMatchObject({ teamReward: 0, localRewards: { a: 0, b: -0.5 }, done: false, success: false });
    expect(s1.state.total).toBe(2);
    const hit = await env.step(s1.state, { a: "3" });
    expect(hit).toMatchObject({ teamReward: 1, done: true, success: true });
    const over = await env.step(s1.state, { a: "9" });
    expect(over).toMatchObject({ teamReward: -1, done: true, success: false });
    expect(s0.total).toBe(0); // the input state is untouched
  });

  it("rejects a bad task payload by name", () => {
    expect(() => env.reset({ id: "bad", split: "train", payload: { target: 0 } }, 0)).toThrow(
      /task bad: target/,
    );
  });
});
