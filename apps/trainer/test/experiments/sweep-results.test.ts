/**
 * A sweep's results: one row per point with results (grid order, seeds in order), its start, final
 * and gain over seeds, the pooled k/n with its Wilson interval, and the table the command prints.
 */
import { describe, expect, it } from "vitest";
import { loadGridText, planSweep } from "../../src/experiments/sweep-grid.ts";
import {
  type PointResult,
  SweepRowSchema,
  summariseSweep,
  sweepRows,
} from "../../src/experiments/sweep-results.ts";
import { seedInterval, wilson } from "../../src/reports/statistics.ts";
import { tinySweepRecipe } from "../tiny.ts";

const plan = planSweep({
  sweepId: "s1",
  command: "c",
  gridFile: "g.yaml",
  grid: loadGridText("grid: { optimizer.lr: [0.001, 0.01, 0.1] }\n"),
  recipeText: tinySweepRecipe("/tmp/unused"),
  recipeWhere: "tiny.yaml",
  seeds: [1, 2],
  evalTasks: 10,
});

const result = (
  pointIndex: number,
  seed: number,
  start: number,
  final: number,
  seconds: number,
): PointResult => {
  const point = plan.points[pointIndex]!;
  return {
    point: point.name,
    pointId: point.id,
    recipeHash: "h",
    seed,
    runId: `${point.id}-s${seed}`,
    successRate: final,
    successes: Math.round(final * 10),
    tasks: 10,
    startSuccessRate: start,
    meanTeamReturn: 0,
    samples: 7 + seed,
    steps: 2,
    seconds,
    rlSeconds: seconds / 2,
  };
};

describe("sweep results", () => {
  it("one row per point with results, in grid order, seeds in order; intervals over seeds from two seeds", () => {
    const results = [
      result(2, 1, 0.3, 0.3, 60), // one seed only: no interval over seeds
      result(0, 2, 0.2, 0.6, 120),
      result(0, 1, 0.1, 0.4, 60),
    ];
    const rows = summariseSweep(plan, results);
    expect(rows.map((r) => [r.point, r.seeds])).toEqual([
      ["optimizer.lr=0.001", 2],
      ["optimizer.lr=0.1", 1],
    ]);
    const [first, last] = rows;
    expect(first).toMatchObject({
      id: "optimizer.lr-0.001",
      steps: 2,
      startMean: 0.15000000000000002,
      pooled: { successes: 10, tasks: 20, ci95: wilson(10, 20) },
      perSeed: [
        { seed: 1, runId: "optimizer.lr-0.001-s1", start: 0.1, final: 0.4 },
        { seed: 2, runId: "optimizer.lr-0.001-s2", start: 0.2, final: 0.6 },
      ],
      minutesPerRun: 1.5,
      rlMinutesPerRun: 0.75,
      samplesPerRun: 9, // the mean of 8 and 9 (8.5), rounded half up
    });
    expect(first!.finalMean).toBeCloseTo(0.5, 12);
    expect(first!.finalCi95Seeds).toEqual(seedInterval([0.4, 0.6]).ci95);
    expect(first!.gainMean).toBeCloseTo(0.35, 12);
    expect(first!.gainCi95Seeds).toEqual(seedInterval([0.4 - 0.1, 0.6 - 0.2], [-1, 1]).ci95);
    expect(last!.finalCi95Seeds).toBeUndefined();
    expect(last!.gainCi95Seeds).toBeUndefined();
    for (const row of rows) expect(SweepRowSchema.parse(row)).toEqual(row);
    expect(summariseSweep(plan, [])).toEqual([]);
  });

  it("the table: percentages, signed gains, '-' for an interval one seed cannot give", () => {
    const [row] = sweepRows(summariseSweep(plan, [result(1, 3, 0.25, 0.5, 90)]));
    expect(row).toEqual({
      point: "optimizer.lr=0.01",
      steps: 2,
      seeds: 1,
      "start %": "25.0",
      "final %": "50.0",
      "95% CI (seeds)": "-",
      "pooled k/n": "5/10",
      "95% CI (pooled)": `[${(100 * wilson(5, 10)[0]).toFixed(1)}, ${(100 * wilson(5, 10)[1]).toFixed(1)}]`,
      "gain (points)": "+25.0",
      "gain 95% CI": "-",
      "per seed: start → final %": "s3 25.0→50.0",
      "min/run": "1.5",
    });
  });
});
