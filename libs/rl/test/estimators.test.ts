import { sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { groupAdvantages } from "../src/advantages.ts";
import { EstimationConfigSchema, estimateAdvantages } from "../src/estimators.ts";
import { runStrategy, StrategyConfigSchema } from "../src/strategies.ts";
import { context, listPolicies, sumTask, twoAgentTeam } from "./helpers.ts";

const env = sumToTargetEnv(["a", "b"]);
const policies = () => listPolicies(["1", "2"], ["1", "3"]);

describe("advantage stage", () => {
  it("each group's advantages are groupAdvantages of its returns, in batch order", async () => {
    const config = StrategyConfigSchema.parse({
      name: "atgrpo",
      candidates: 2,
    });
    const estimation = EstimationConfigSchema.parse({
      baseline: "rloo",
      normalizeStd: true,
      eps: 1e-6,
      std: "sample",
    });
    const out = await runStrategy(
      context(env, policies(), twoAgentTeam("sequential", 3)),
      [sumTask(5), sumTask(6)],
      config,
    );
    const { samples, filters } = estimateAdvantages(out.samples, estimation);
    expect(samples.map((s) => s.groupKey)).toEqual(out.samples.map((s) => s.groupKey));
    for (const key of new Set(samples.map((s) => s.groupKey))) {
      const members = samples.filter((s) => s.groupKey === key);
      expect(members.map((s) => s.advantage)).toEqual(
        groupAdvantages(
          members.map((s) => s.return),
          estimation,
        ),
      );
    }
    expect(filters).toEqual({
      kept: new Set(samples.map((s) => s.groupKey)).size,
      droppedZeroVariance: 0,
      droppedLowMean: 0,
    });
  });

  it("filters drop whole groups of the batch before the estimator", async () => {
    const config = StrategyConfigSchema.parse({
      name: "atgrpo",
      candidates: 2,
    });
    const estimation = EstimationConfigSchema.parse({
      filters: { dropZeroVariance: true, dropLowestMeanFraction: 0.5 },
    });
    const out = await runStrategy(
      context(env, policies(), twoAgentTeam("sequential", 2)),
      [sumTask(5), sumTask(6), sumTask(7)],
      config,
    );
    const groups = new Set(out.samples.map((s) => s.groupKey)).size;
    const { samples, filters } = estimateAdvantages(out.samples, estimation);
    expect(filters.kept + filters.droppedZeroVariance + filters.droppedLowMean).toBe(groups);
    expect(filters.droppedLowMean).toBe(Math.floor((groups - filters.droppedZeroVariance) * 0.5));
    expect(new Set(samples.map((s) => s.groupKey)).size).toBe(filters.kept);
  });
});
