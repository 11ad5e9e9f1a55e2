import { SAMPLE_SCHEMA_VERSION, type Sample, SampleSchema, SamplingParamsSchema } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { auditSamples } from "../../src/experiments/reward-audit.ts";

/** A helper + main sample: its team reward, and its episode's success when the strategy recorded it. */
function sample(team: number, success?: boolean): Sample {
  return SampleSchema.parse({
    schemaVersion: SAMPLE_SCHEMA_VERSION,
    provenance: {
      runId: "r",
      step: 0,
      strategy: "magrpo",
      environment: "coding",
      taskId: "Toy/list:gt3|sum",
      split: "train",
      episode: 0,
      turn: 0,
      agent: "main",
      branch: [],
      candidate: 0,
      policyId: "main",
      policyVersion: 0,
      sampling: SamplingParamsSchema.parse({}),
      seed: 1,
    },
    observation: [{ role: "user", content: "# main: write f, may call aux" }],
    completionText: "def f(xs):\n    return sum(aux(xs))",
    promptTokenIds: [1],
    completionTokenIds: [2],
    samplingLogprobs: [-0.1],
    finishReason: "stop",
    reward: { team, local: 0, total: team },
    return: team,
    advantage: 0,
    groupKey: "g",
    ...(success === undefined ? {} : { success }),
  });
}

describe("reward audit", () => {
  it("shares of samples paid without success, and paid a collaboration tier without success", () => {
    // solved with every tier; paid the structure, syntax and half the tests; a collaboration tier
    // on a failure (what `strict` must never pay); paid nothing.
    const samples = [sample(4, true), sample(2, false), sample(3, false), sample(0, false)];
    expect(auditSamples(7, samples, 2.5)).toEqual({
      step: 7,
      samples: 4,
      success: 0.25,
      reward: 9 / 4,
      paidWithoutSuccess: 0.5,
      teamWithoutSuccess: 0.25,
    });
  });

  it("a sample without its episode's success is solved when its team reward reaches --success-at", () => {
    const samples = [sample(4), sample(2.5), sample(2.25), sample(1)];
    expect(auditSamples(0, samples, 2.5, 2.5)).toMatchObject({ success: 0.5, paidWithoutSuccess: 0.5 });
    // Without the bar, unknown counts as not solved.
    expect(auditSamples(0, samples, 2.5)).toMatchObject({
      success: 0,
      paidWithoutSuccess: 1,
      teamWithoutSuccess: 0.25,
    });
  });
});
