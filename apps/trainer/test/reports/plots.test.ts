/**
 * The compare and sweep plots: the mean curve over seeds (t-interval over seeds, a single run's
 * Wilson interval), and both charts as well-formed SVG naming what they show.
 */
import { DOMParser } from "@xmldom/xmldom";
import { describe, expect, it } from "vitest";
import type { EvalPoint, RunResult } from "../../src/experiments/run-results.ts";
import { finalSuccessSvg, learningCurvesSvg, meanCurve } from "../../src/reports/plots.ts";
import { seedInterval } from "../../src/reports/statistics.ts";

const point = (step: number, successRate: number, ci95: [number, number]): EvalPoint => ({
  step,
  successRate,
  successes: Math.round(successRate * 10),
  tasks: 10,
  ci95,
  meanTeamReturn: successRate,
});

const run = (seed: number, curve: EvalPoint[]): RunResult => ({
  seed,
  runId: `r${seed}`,
  successRate: curve.at(-1)!.successRate,
  successes: curve.at(-1)!.successes,
  tasks: 10,
  startSuccessRate: curve[0]!.successRate,
  meanTeamReturn: 0,
  samples: 8,
  steps: curve.at(-1)!.step,
  seconds: 1,
  curve,
});

const seed1 = run(1, [point(0, 0.2, [0.05, 0.5]), point(1, 0.4, [0.15, 0.7]), point(2, 0.6, [0.3, 0.85])]);
const seed2 = run(2, [point(0, 0.4, [0.15, 0.7]), point(2, 0.8, [0.5, 0.95])]);

function svgRoot(svg: string) {
  const doc = new DOMParser({
    onError: (level, message) => {
      throw new Error(`not well-formed SVG (${level}): ${message}`);
    },
  }).parseFromString(svg, "image/svg+xml");
  return doc.documentElement!;
}

describe("plots", () => {
  it("meanCurve: per step the mean over the seeds evaluated there, a lone seed keeping its Wilson interval", () => {
    const curve = meanCurve([seed1, seed2]);
    expect(curve.map((p) => [p.step, p.n])).toEqual([
      [0, 2],
      [1, 1],
      [2, 2],
    ]);
    expect(curve[0]!.mean).toBeCloseTo(0.3, 12);
    expect(curve[0]!.ci95).toEqual(seedInterval([0.2, 0.4]).ci95);
    expect(curve[1]).toEqual({ step: 1, n: 1, mean: 0.4, ci95: [0.15, 0.7] });
    expect(curve[2]!.mean).toBeCloseTo(0.7, 12);
    expect(curve[2]!.ci95).toEqual(seedInterval([0.6, 0.8]).ci95);
    expect(meanCurve([{ ...seed1, curve: undefined }])).toEqual([]);
  });

  it("learning curves and final success: well-formed SVG with the title and how the intervals were made", async () => {
    const groups = [
      { name: "lr=0.001", results: [seed1, seed2] },
      { name: "lr=0.01", results: [seed2] },
    ];
    const curves = await learningCurvesSvg(groups, "the sweep");
    expect(svgRoot(curves).tagName).toBe("svg");
    expect(curves).toContain("Held-out success by RL step — the sweep");
    expect(curves).toContain("mean over 2/1 seeds with its 95% t-interval; 10 held-out tasks");
    const final = await finalSuccessSvg([{ name: "one", results: [seed1] }], "a compare");
    expect(svgRoot(final).tagName).toBe("svg");
    expect(final).toContain("Held-out success at the start and the end — a compare");
    expect(final).toContain(
      "one seed, with the evaluation's 95% Wilson interval; 10 held-out tasks; a tick per seed",
    );
    // A single run's interval is its own evaluation's Wilson interval: start [0.05, 0.5], final [0.3, 0.85].
    expect(final).toContain(
      'aria-label="held-out success: 5%; category: one; high: 0.5; series: start (warm start)"',
    );
    expect(final).toContain('aria-label="held-out success: 30%; category: one; high: 0.85; series: final"');
  });
});
