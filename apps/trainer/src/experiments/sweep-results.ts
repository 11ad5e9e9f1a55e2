/**
 * `trainer:sweep`, the results: per point the start and final held-out success (every run
 * evaluated greedily on the same held-out tasks) with intervals over seeds, the gain, and plots
 * of the learning curves and final results, written to runs/<sweep id>/{sweep.json, sweep.md,
 * curves.svg, final.svg}.
 */
import { mean } from "@troupe/core";
import type { ObjectStore } from "@troupe/storage";
import { z } from "zod";
import { type CurvePoint, finalSuccessSvg, learningCurvesSvg, meanCurve } from "../reports/plots.ts";
import { interval, markdownTable, pct, signedPoints, table } from "../reports/reporter.ts";
import { seedSummary } from "../reports/statistics.ts";
import { RunResultFields } from "./run-results.ts";
import { GridFileSchema, type SweepPlan } from "./sweep-grid.ts";

export const PointResultSchema = z.strictObject({
  point: z.string(),
  pointId: z.string(),
  /** stableHash of the run's recipe: a rerun with a changed point under the same id is refused. */
  recipeHash: z.string(),
  ...RunResultFields,
});
export type PointResult = z.infer<typeof PointResultSchema>;

const Interval = z.tuple([z.number(), z.number()]);

export const SweepRowSchema = z.strictObject({
  point: z.string(),
  id: z.string(),
  steps: z.number().int(),
  seeds: z.number().int(),
  /** Mean held-out success after the warm start (RL step 0). */
  startMean: z.number(),
  /** Mean final held-out success over seeds, with its 95% t-interval over seeds (2+ seeds). */
  finalMean: z.number(),
  finalCi95Seeds: Interval.optional(),
  /** All seeds' final evaluations pooled: k of n with its 95% Wilson interval. */
  pooled: z.strictObject({ successes: z.number().int(), tasks: z.number().int(), ci95: Interval }),
  /** Final − start per seed: the mean and its 95% t-interval over seeds (2+ seeds). */
  gainMean: z.number(),
  gainCi95Seeds: Interval.optional(),
  perSeed: z.array(
    z.strictObject({ seed: z.number().int(), runId: z.string(), start: z.number(), final: z.number() }),
  ),
  /** Mean wall minutes of the call that finished each run, and of the runs' RL steps alone. */
  minutesPerRun: z.number(),
  rlMinutesPerRun: z.number(),
  samplesPerRun: z.number(),
});
export type SweepRow = z.infer<typeof SweepRowSchema>;

export const SweepFileSchema = z.strictObject({
  sweepId: z.string(),
  command: z.string(),
  gridFile: z.string(),
  grid: GridFileSchema,
  base: z.record(z.string(), z.unknown()),
  seeds: z.array(z.number().int()),
  evalTasks: z.number().int(),
  points: z.array(z.strictObject({ name: z.string(), id: z.string(), set: z.array(z.string()) })),
  rows: z.array(SweepRowSchema),
  /** Per point: mean held-out success over seeds at every evaluated RL step. */
  curves: z.record(
    z.string(),
    z.array(
      z.strictObject({
        step: z.number().int(),
        n: z.number().int(),
        mean: z.number(),
        ci95: Interval.optional(),
      }),
    ),
  ),
  results: z.array(PointResultSchema),
});
export type SweepFile = z.infer<typeof SweepFileSchema>;

/** One row per point with results, in grid order. */
export function summariseSweep(plan: SweepPlan, results: readonly PointResult[]): SweepRow[] {
  return plan.points.flatMap((point) => {
    const runs = results.filter((r) => r.pointId === point.id).sort((a, b) => a.seed - b.seed);
    if (runs.length === 0) return [];
    const { final, gain, startMean, pooled } = seedSummary(runs);
    return [
      {
        point: point.name,
        id: point.id,
        steps: point.recipe.train.steps,
        seeds: runs.length,
        startMean,
        finalMean: final.mean,
        ...(final.ci95 ? { finalCi95Seeds: final.ci95 } : {}),
        pooled,
        gainMean: gain.mean,
        ...(gain.ci95 ? { gainCi95Seeds: gain.ci95 } : {}),
        perSeed: runs.map((r) => ({
          seed: r.seed,
          runId: r.runId,
          start: r.startSuccessRate,
          final: r.successRate,
        })),
        minutesPerRun: mean(runs.map((r) => r.seconds)) / 60,
        rlMinutesPerRun: mean(runs.map((r) => r.rlSeconds ?? 0)) / 60,
        samplesPerRun: Math.round(mean(runs.map((r) => r.samples))),
      },
    ];
  });
}

/** The sweep as table rows: `table` prints them, `markdownTable` writes them. */
export function sweepRows(rows: readonly SweepRow[]): Record<string, string | number>[] {
  return rows.map((row) => ({
    point: row.point,
    steps: row.steps,
    seeds: row.seeds,
    "start %": pct(row.startMean),
    "final %": pct(row.finalMean),
    "95% CI (seeds)": interval(row.finalCi95Seeds),
    "pooled k/n": `${row.pooled.successes}/${row.pooled.tasks}`,
    "95% CI (pooled)": interval(row.pooled.ci95),
    "gain (points)": signedPoints(row.gainMean),
    "gain 95% CI": interval(row.gainCi95Seeds, signedPoints),
    "per seed: start → final %": row.perSeed
      .map((s) => `s${s.seed} ${pct(s.start)}→${pct(s.final)}`)
      .join(", "),
    "min/run": row.minutesPerRun.toFixed(1),
  }));
}

function sweepMarkdown(plan: SweepPlan, rows: readonly SweepRow[], results: readonly PointResult[]): string {
  const runs = results
    .slice()
    .sort((a, b) => a.pointId.localeCompare(b.pointId) || a.seed - b.seed)
    .map((r) => ({
      point: r.point,
      seed: r.seed,
      run: `\`${r.runId}\``,
      "start %": pct(r.startSuccessRate),
      "final %": pct(r.successRate),
      "k/n": `${r.successes}/${r.tasks}`,
      samples: r.samples,
      "RL min": ((r.rlSeconds ?? 0) / 60).toFixed(1),
    }));
  return [
    `# Sweep \`${plan.sweepId}\``,
    "",
    "Every number on this page comes from this command; rerun it to reproduce the sweep or continue it",
    "(finished runs are read back from the store, an interrupted run resumes from its newest committed step):",
    "",
    "```bash",
    plan.command,
    "```",
    "",
    `Base recipe \`${plan.base.name}\` from \`${plan.gridFile}\`; ${plan.points.length} points × seeds ` +
      `${plan.seeds.join(", ")}. Held-out success is greedy decoding on the same ${plan.evalTasks} test tasks ` +
      "for every run. *start*: after the warm start (RL step 0); *final*: after the last RL step. Means are " +
      "over seeds; *95% CI (seeds)* is the t-interval over seeds (the uncertainty that matters: seeds differ " +
      "in warm start, tasks and sampling); *pooled k/n* adds up every seed's final evaluation, with its Wilson " +
      "interval (test-set noise only); *gain* is final − start per seed, in percentage points, with its " +
      "t-interval over seeds.",
    "",
    markdownTable(sweepRows(rows)),
    "",
    "![Held-out success by RL step](curves.svg)",
    "",
    "![Start and final held-out success per point](final.svg)",
    "",
    "## Runs",
    "",
    markdownTable(runs),
    "",
  ].join("\n");
}

export interface SweepWritten {
  readonly json: string;
  readonly markdown: string;
  readonly curves: string;
  readonly final: string;
  /** The table as plain text, for the terminal. */
  readonly text: string;
}

/** Writes sweep.json, sweep.md, curves.svg and final.svg to runs/<sweep id>/; returns their keys. */
export async function writeSweep(
  store: ObjectStore,
  plan: SweepPlan,
  results: readonly PointResult[],
): Promise<SweepWritten> {
  const rows = summariseSweep(plan, results);
  const groups = rows.map((row) => ({
    name: row.point,
    results: results.filter((r) => r.pointId === row.id),
  }));
  const curves: Record<string, CurvePoint[]> = Object.fromEntries(
    groups.map((g) => [g.name, meanCurve(g.results)]),
  );
  const file: SweepFile = {
    sweepId: plan.sweepId,
    command: plan.command,
    gridFile: plan.gridFile,
    grid: plan.grid,
    base: plan.base,
    seeds: [...plan.seeds],
    evalTasks: plan.evalTasks,
    points: plan.points.map((p) => ({ name: p.name, id: p.id, set: [...p.set] })),
    rows,
    curves,
    results: [...results],
  };
  const folder = `runs/${plan.sweepId}`;
  const keys = {
    json: `${folder}/sweep.json`,
    markdown: `${folder}/sweep.md`,
    curves: `${folder}/curves.svg`,
    final: `${folder}/final.svg`,
  };
  const what = `sweep ${plan.sweepId}`;
  const encoder = new TextEncoder();
  await store.put(keys.json, encoder.encode(`${JSON.stringify(file, null, 2)}\n`));
  await store.put(keys.markdown, encoder.encode(sweepMarkdown(plan, rows, results)));
  await store.put(keys.curves, encoder.encode(await learningCurvesSvg(groups, what)));
  await store.put(keys.final, encoder.encode(await finalSuccessSvg(groups, what)));
  return { ...keys, text: table(sweepRows(rows)) };
}
