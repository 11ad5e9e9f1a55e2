import { describe, expect, it } from "vitest";
import { samplingParams } from "../src/policy.ts";
import { parseRolloutSample, parseSample, SAMPLE_SCHEMA_VERSION } from "../src/sample.ts";

describe("sample schema", () => {
  const sample = {
    schemaVersion: SAMPLE_SCHEMA_VERSION,
    provenance: {
      runId: "r",
      step: 0,
      strategy: "atgrpo",
      environment: "e",
      taskId: "t",
      split: "train",
      episode: 0,
      turn: 0,
      agent: "a",
      branch: [],
      candidate: 1,
      policyId: "p",
      policyVersion: 0,
      sampling: samplingParams(),
      seed: 5,
    },
    observation: [{ role: "user", content: "hi" }],
    completionText: "x",
    promptTokenIds: [1],
    completionTokenIds: [120],
    samplingLogprobs: [-0.1],
    finishReason: "stop",
    reward: { team: 1, local: 0, total: 1 },
    return: 1,
    advantage: 0.5,
    groupKey: "e/t/turn=0/agent=a",
  };

  it("accepts a valid sample", () => {
    expect(parseSample(sample).provenance.candidate).toBe(1);
  });

  it("names the bad field", () => {
    expect(() =>
      parseSample({ ...sample, provenance: { ...sample.provenance, turn: -1 } }, "shard s1 row 3"),
    ).toThrow(/shard s1 row 3: provenance\.turn/);
    expect(() => parseSample({ ...sample, samplingLogprobs: [] })).toThrow(
      /0 entries for 1 completion tokens/,
    );
  });

  it("a rollout sample has no advantage: parseRolloutSample drops it, parseSample needs it", () => {
    const { advantage: _, ...rollout } = sample;
    expect("advantage" in parseRolloutSample(sample)).toBe(false);
    expect(parseRolloutSample(rollout, "worker shard").groupKey).toBe("e/t/turn=0/agent=a");
    expect(() => parseSample(rollout, "step shard")).toThrow(/step shard: advantage/);
    expect(() => parseRolloutSample({ ...rollout, completionTokenIds: [] }, "w")).toThrow(
      "w: samplingLogprobs has 1 entries for 0 completion tokens",
    );
  });
});
