/**
 * The pieces between the strategies and the trainer: the strategy registry, the advantage stage
 * and the episode runner's hooks.
 */

import { runEpisodes } from "@troupe/core";
import { sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { groupAdvantages } from "../src/advantages.ts";
import { EstimationConfigSchema, estimateAdvantages } from "../src/estimators.ts";
import { defaultMagrpoConfig } from "../src/magrpo.ts";
import { runStrategy, StrategyConfigSchema } from "../src/strategies.ts";
import { context, listPolicies, twoAgentTeam } from "./helpers.ts";

const env = sumToTargetEnv(["a", "b"]);
const task = (target: number) => ({ id: `t${target}`, split: "train" as const, payload: { target } });
const policies = () => listPolicies(["1", "2"], ["1", "3"]);

describe("strategy registry", () => {
  it("parses a strategy section with its defaults and reads AT-GRPO's alpha as teamWeight", () => {
    expect(StrategyConfigSchema.parse({ name: "magrpo" })).toEqual({
      name: "magrpo",
      ...defaultMagrpoConfig,
    });
    expect(StrategyConfigSchema.parse({ name: "atgrpo", alpha: 0.5 })).toMatchObject({ teamWeight: 0.5 });
    expect(StrategyConfigSchema.safeParse({ name: "ppo" }).success).toBe(false);
  });

  it("runs the named strategy; its samples wait for the advantage stage", async () => {
    const config = StrategyConfigSchema.parse({ name: "magrpo", groupSize: 2, jointMode: "aligned" });
    const out = await runStrategy(context(env, policies(), twoAgentTeam("parallel", 2)), [task(5)], config);
    expect(out.samples.every((s) => s.provenance.strategy === "magrpo" && !("advantage" in s))).toBe(true);
  });
});

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
      [task(5), task(6)],
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
      [task(5), task(6), task(7)],
      config,
    );
    const groups = new Set(out.samples.map((s) => s.groupKey)).size;
    const { samples, filters } = estimateAdvantages(out.samples, estimation);
    expect(filters.kept + filters.droppedZeroVariance + filters.droppedLowMean).toBe(groups);
    expect(filters.droppedLowMean).toBe(Math.floor((groups - filters.droppedZeroVariance) * 0.5));
    expect(new Set(samples.map((s) => s.groupKey)).size).toBe(filters.kept);
  });
});

describe("episode runner", () => {
  it("reports every step as it happens, sees every request first and wraps the work", async () => {
    const seen: string[] = [];
    let guarded = 0;
    const [episode] = await runEpisodes(
      context(env, policies(), twoAgentTeam("sequential", 3)),
      [task(5)],
      1,
      {
        onStart: ([ep]) => seen.push(`start ${ep!.task.id}`),
        beforeGenerate: (requests) => seen.push(`ask ${requests.map((r) => r.agent).join(",")}`),
        guard: (work) => {
          guarded++;
          return work;
        },
        onStep: (_, step) => seen.push(`step ${step.turn} ${Object.entries(step.actions).join(",")}`),
      },
    );
    // a says "1" (total 1), b says "1" (2), a "1" (3), b "1" (4), a "1" (5 = target, done).
    expect(seen).toEqual([
      "start t5",
      "ask a",
      "step 0 a,1",
      "ask b",
      "step 0 b,1",
      "ask a",
      "step 1 a,1",
      "ask b",
      "step 1 b,1",
      "ask a",
      "step 2 a,1",
    ]);
    expect(guarded).toBe(10); // a generation and an environment step per stage
    expect(episode).toMatchObject({ done: true, success: true, judged: true, turns: 3 });
  });
});
