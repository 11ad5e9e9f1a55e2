/** The frame of the text environments: one user message per observation, no step after the end. */
import { userObservation } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { checkMaxTurns, textEnvironment } from "../src/text-env.ts";

interface Echo {
  readonly said: string[];
  readonly done: boolean;
}

const env = textEnvironment<Echo, { readonly word: string }>({
  name: "echo",
  agents: ["a", "b"],
  rewardBounds: { team: [0, 1], local: [0, 0] },
  reset: (task) => ({ said: [task.payload.word], done: false }),
  prompt: (state, agent) => `${agent}: ${state.said.join(" ")}`,
  step: (state, actions) => {
    const said = [...state.said, actions.a ?? "", actions.b ?? ""];
    return {
      state: { said, done: said.length >= 5 },
      teamReward: 1,
      localRewards: {},
      done: said.length >= 5,
    };
  },
});

describe("textEnvironment", () => {
  it("observations are the spec's prompt as one user message", async () => {
    expect([env.name, env.agents, env.rewardBounds]).toEqual([
      "echo",
      ["a", "b"],
      { team: [0, 1], local: [0, 0] },
    ]);
    const state = await env.reset({ id: "t", split: "test", payload: { word: "hi" } }, 0);
    expect(env.observe(state, "b")).toEqual(userObservation("b: hi"));
  });

  it("steps until done, then refuses another step naming the environment", async () => {
    const s0 = await env.reset({ id: "t", split: "test", payload: { word: "hi" } }, 0);
    const first = await env.step(s0, { a: "x", b: "y" });
    expect([first.done, first.state.said]).toEqual([false, ["hi", "x", "y"]]);
    const second = await env.step(first.state, { a: "z" });
    expect(second.done).toBe(true);
    await expect(env.step(second.state, { a: "again" })).rejects.toThrow(
      "echo: step called on a finished episode",
    );
  });
});

describe("checkMaxTurns", () => {
  it("a positive integer passes; anything else is one line naming who", () => {
    expect(checkMaxTurns("mathEnv", 3)).toBe(3);
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => checkMaxTurns("mathEnv", bad)).toThrow(`mathEnv: maxTurns must be >= 1, got ${bad}`);
  });
});
