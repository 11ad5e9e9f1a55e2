import { describe, expect, it } from "vitest";
import {
  type ArmResult,
  ArmResultSchema,
  compareRows,
  pairedDifferences,
  pairedRows,
  summarise,
} from "../../src/experiments/compare-results.ts";

/** A finished arm × seed with `successes` of `tasks` held-out tasks solved (started at 10%). */
const run = (arm: ArmResult["arm"], seed: number, successes: number, tasks = 64): ArmResult => ({
  arm,
  seed,
  runId: `c-${arm}-s${seed}`,
  successRate: successes / tasks,
  successes,
  tasks,
  startSuccessRate: 0.1,
  meanTeamReturn: 0,
  samples: 1000,
  steps: 30,
  seconds: 60,
});

describe("compare statistics", () => {
  it("reads arm results stored before curves and RL time were kept", () => {
    const old = {
      arm: "grpo",
      seed: 1,
      runId: "c-grpo-s1",
      successRate: 0.5,
      successes: 32,
      tasks: 64,
      startSuccessRate: 0.4,
      meanTeamReturn: -0.2,
      samples: 3137,
      steps: 30,
      seconds: 90,
    };
    expect(ArmResultSchema.parse(old)).toEqual(old);
  });

  it("summarises per arm in the fixed arm order, pooling k/n with a Wilson interval", () => {
    const rows = summarise([run("atgrpo-per-role", 2, 32), run("grpo", 1, 8), run("atgrpo-per-role", 1, 16)]);
    expect(rows.map((r) => r.arm)).toEqual(["grpo", "atgrpo-per-role"]);
    const team = rows[1]!;
    expect(team.perSeed).toEqual([0.25, 0.5]);
    expect(team.pooled).toMatchObject({ successes: 48, tasks: 128 });
    expect(team.meanSuccess).toBeCloseTo(0.375, 12);
    expect(compareRows(rows)[1]).toMatchObject({
      seeds: 2,
      "pooled k/n": "48/128",
      "per seed %": "25.0 50.0",
    });
    // Gains paired by seed: 0.25 − 0.1 and 0.5 − 0.1; two seeds give a t-interval wider than ±1.
    expect(team.gainMean).toBeCloseTo(0.275, 12);
    expect(compareRows(rows)[1]).toMatchObject({
      "gain over start (points)": "+27.5",
      "gain 95% CI (seeds)": "[−100.0, +100.0]",
    });
    const steady = summarise([run("warm-start", 1, 8), run("warm-start", 2, 8), run("warm-start", 3, 8)]);
    // 8/64 − 0.1 on every seed: a zero-width interval.
    expect(compareRows(steady)[0]).toMatchObject({
      "gain over start (points)": "+2.5",
      "gain 95% CI (seeds)": "[+2.5, +2.5]",
    });
  });

  it("pairs the best arm with each other arm by seed, on the seeds both finished", () => {
    // Five seeds of 500 held-out tasks: a team that fails on seed 4, a steadier single agent, and
    // a team without RL that finished seeds 1–3 only.
    const team = [497, 487, 498, 360, 496].map((k, i) => run("atgrpo-shared", i + 1, k, 500));
    const single = [403, 365, 385, 407, 369].map((k, i) => run("grpo", i + 1, k, 500));
    const before = [332, 270, 279].map((k, i) => run("warm-start", i + 1, k, 500));
    const paired = pairedDifferences([...single, ...before, ...team]);
    expect(paired.map((d) => [d.arm, d.versus, d.seeds])).toEqual([
      ["atgrpo-shared", "grpo", [1, 2, 3, 4, 5]],
      ["atgrpo-shared", "warm-start", [1, 2, 3]],
    ]);
    const diffs = [0.188, 0.244, 0.226, -0.094, 0.254];
    paired[0]!.perSeed.forEach((d, i) => expect(d).toBeCloseTo(diffs[i]!, 12));
    const mean = 0.1636;
    const sd = Math.sqrt(diffs.reduce((s, d) => s + (d - mean) ** 2, 0) / 4);
    expect(paired[0]!.mean).toBeCloseTo(mean, 12);
    expect(paired[0]!.ci95![0]).toBeCloseTo(mean - (2.776 * sd) / Math.sqrt(5), 12);
    expect(paired[0]!.ci95![1]).toBeCloseTo(mean + (2.776 * sd) / Math.sqrt(5), 12);
    expect(pairedRows(paired)[1]).toEqual({
      arm: "atgrpo-shared",
      "minus arm": "warm-start",
      "paired seeds": "1,2,3",
      // (0.330 + 0.434 + 0.438) / 3 ± 4.303 · sd / √3
      "difference (points)": "+40.1",
      "95% CI (seeds)": "[+24.9, +55.3]",
      "per seed (points)": "+33.0 +43.4 +43.8",
    });
    // One arm, or arms with no seed in common: nothing to pair.
    expect(pairedDifferences(team)).toEqual([]);
    expect(pairedDifferences([run("grpo", 1, 8), run("warm-start", 2, 8)])).toEqual([]);
  });
});
