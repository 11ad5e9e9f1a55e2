/**
 * The plots of `trainer:compare` and `trainer:sweep` (SVG, drawn with @troupe/charts), for groups
 * of runs that differ only in their seed (a compare arm, a sweep point):
 *
 *   curves.svg  held-out success vs RL step: per group the mean over seeds, with a band of the 95%
 *               t-interval over seeds (one seed: the evaluation's own 95% Wilson interval)
 *   final.svg   per group the start (warm start) and final held-out success, mean over seeds with
 *               the same intervals, and a tick per seed
 */
import { intervalChartSvg, type LineSeries, lineChartSvg } from "@troupe/charts";
import type { EvalPoint, RunResult } from "../experiments/run-results.ts";
import { seedInterval } from "./statistics.ts";

export interface RunGroup {
  readonly name: string;
  readonly results: readonly RunResult[];
}

export interface CurvePoint {
  readonly step: number;
  /** Seeds evaluated at this step. */
  readonly n: number;
  readonly mean: number;
  readonly ci95?: [number, number];
}

/**
 * Mean held-out success over seeds at every evaluated step (steps where only some seeds have an
 * evaluation average those). The interval is the t-interval over seeds, or with one seed the
 * evaluation's Wilson interval.
 */
export function meanCurve(results: readonly RunResult[]): CurvePoint[] {
  const bySeedStep = new Map<number, EvalPoint[]>();
  for (const result of results) {
    for (const point of result.curve ?? []) {
      const list = bySeedStep.get(point.step) ?? [];
      list.push(point);
      bySeedStep.set(point.step, list);
    }
  }
  return [...bySeedStep.entries()]
    .sort(([a], [b]) => a - b)
    .map(([step, points]) => {
      const { mean, ci95 } = seedInterval(points.map((p) => p.successRate));
      const interval = points.length === 1 ? ([...points[0]!.ci95] as [number, number]) : ci95;
      return { step, n: points.length, mean, ...(interval ? { ci95: interval } : {}) };
    });
}

/** The interval drawn for one group's per-seed values: over seeds, or the single run's Wilson interval. */
function groupInterval(values: readonly number[], single: readonly [number, number] | undefined) {
  const { mean, ci95 } = seedInterval(values);
  const interval = values.length === 1 ? single : ci95;
  return { value: mean, ...(interval ? { low: interval[0], high: interval[1] } : {}) };
}

function intervalNote(groups: readonly RunGroup[]): string {
  const seeds = new Set(groups.map((g) => g.results.length));
  const tasks = new Set(groups.flatMap((g) => g.results.map((r) => r.tasks)));
  const seedText =
    seeds.size === 1 && seeds.has(1)
      ? "one seed, with the evaluation's 95% Wilson interval"
      : `mean over ${[...seeds].join("/")} seeds with its 95% t-interval`;
  return `${seedText}; ${[...tasks].join("/")} held-out tasks`;
}

export async function learningCurvesSvg(groups: readonly RunGroup[], what: string): Promise<string> {
  const series: LineSeries[] = groups.map((group) => ({
    name: group.name,
    points: meanCurve(group.results).map((p) => ({
      x: p.step,
      y: p.mean,
      ...(p.ci95 ? { low: p.ci95[0], high: p.ci95[1] } : {}),
    })),
  }));
  return lineChartSvg({
    title: `Held-out success by RL step — ${what}`,
    subtitle: intervalNote(groups),
    xLabel: "RL step (0 = after the warm start)",
    xTickMinStep: 1,
    yLabel: "held-out success",
    yFormat: ".0%",
    yDomain: [0, 1],
    series,
  });
}

export async function finalSuccessSvg(groups: readonly RunGroup[], what: string): Promise<string> {
  const rows = groups.flatMap((group) => {
    const runs = [...group.results].sort((a, b) => a.seed - b.seed);
    const single = runs.length === 1 ? runs[0] : undefined;
    // Each series: its name, every seed's success, and a single run's own Wilson interval.
    const series = [
      [
        "start (warm start)",
        runs.map((r) => r.startSuccessRate),
        single?.curve?.find((p) => p.step === 0)?.ci95,
      ],
      ["final", runs.map((r) => r.successRate), single?.curve?.at(-1)?.ci95],
    ] as const;
    return series.map(([name, samples, wilson]) => ({
      category: group.name,
      series: name,
      ...groupInterval(samples, wilson),
      samples,
    }));
  });
  return intervalChartSvg({
    title: `Held-out success at the start and the end — ${what}`,
    subtitle: `${intervalNote(groups)}; a tick per seed`,
    valueLabel: "held-out success",
    valueFormat: ".0%",
    valueDomain: [0, 1],
    rows,
  });
}
