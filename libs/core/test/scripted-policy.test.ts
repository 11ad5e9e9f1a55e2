import { describe, expect, it } from "vitest";
import { userObservation } from "../src/messages.ts";
import { samplingParams } from "../src/policy.ts";
import { ScriptedPolicy, temperedProbabilities } from "../src/scripted-policy.ts";

describe("scripted policy", () => {
  const policy = new ScriptedPolicy("p", () => [
    { text: "yes", weight: 3 },
    { text: "no", weight: 1 },
  ]);
  const obs = userObservation("ok?");

  it("tempered probabilities: p ∝ w^(1/T)", () => {
    expect(temperedProbabilities([3, 1], 1)).toEqual([0.75, 0.25]);
    expect(temperedProbabilities([3, 1], 0.5)).toEqual([0.9, 0.1]);
    expect(temperedProbabilities([3, 1], 0)).toEqual([1, 0]);
  });

  it("completions carry byte tokens and log-probs that sum to log p(text)", async () => {
    const [c] = await policy.generate([{ observation: obs, seed: 1 }], samplingParams({ temperature: 0 }));
    expect(c!.text).toBe("yes");
    expect(c!.tokenIds).toEqual([121, 101, 115]);
    expect(c!.logprobs.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 12); // T = 0: p = 1
    const [d] = await policy.generate([{ observation: obs, seed: 1 }], samplingParams({ temperature: 1 }));
    expect(d!.logprobs.reduce((a, b) => a + b, 0)).toBeCloseTo(Math.log(d!.text === "yes" ? 0.75 : 0.25), 12);
  });

  it("applies stop strings and max tokens", async () => {
    const long = new ScriptedPolicy("p", () => [{ text: "abc####def", weight: 1 }]);
    const [s] = await long.generate([{ observation: obs, seed: 0 }], samplingParams({ stop: ["####"] }));
    expect([s!.text, s!.finishReason]).toEqual(["abc", "stop"]);
    const [m] = await long.generate([{ observation: obs, seed: 0 }], samplingParams({ maxTokens: 2 }));
    expect([m!.text, m!.finishReason, m!.tokenIds.length]).toEqual(["ab", "length", 2]);
  });
});
