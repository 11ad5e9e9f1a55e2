/**
 * What a finished run reports, as compare and sweep store it and reports read it: its held-out
 * learning curve and final numbers, every one read back from the run's stored metrics, so a
 * resumed run, or one that had already finished, reports the same curve and final evaluation as
 * an uninterrupted one.
 */
import { type MetricsRow, type ObjectStore, RunStore } from "@troupe/storage";
import { z } from "zod";
import type { Recipe } from "../recipe.ts";

/** One held-out evaluation of a run: after `step` RL steps (0 = the warm start). */
export const EvalPointSchema = z.strictObject({
  step: z.number().int(),
  successRate: z.number(),
  successes: z.number().int(),
  tasks: z.number().int(),
  /** The evaluation's own 95% Wilson interval. */
  ci95: z.tuple([z.number(), z.number()]),
  meanTeamReturn: z.number(),
});
export type EvalPoint = z.infer<typeof EvalPointSchema>;

/** What a finished run reports. Stored as JSON by compare and sweep, read back on a rerun. */
export const RunResultFields = {
  seed: z.number().int(),
  runId: z.string(),
  /** The final held-out evaluation (after the last RL step; the start for a run without RL). */
  successRate: z.number(),
  successes: z.number().int(),
  tasks: z.number().int(),
  startSuccessRate: z.number(),
  meanTeamReturn: z.number(),
  /** Samples trained on, over all committed steps. */
  samples: z.number().int(),
  steps: z.number().int(),
  /** Wall time of the call that finished the run (a resumed run: only the resumed part; a cached warm start: not counted). */
  seconds: z.number(),
  /** Sum of the committed RL steps' own time (rollouts, learner, evaluations), the same however the run was resumed. */
  rlSeconds: z.number().optional(),
  /** Every held-out evaluation of the run, in step order (absent in results written before curves were kept). */
  curve: z.array(EvalPointSchema).optional(),
};
export const RunResultSchema = z.strictObject(RunResultFields);
export type RunResult = z.infer<typeof RunResultSchema>;

/**
 * The result of a finished run, read back from its stored metrics; `seconds` is the wall time of
 * the call that finished it. A run without its final evaluation is an error.
 */
export async function finishedRunResult(
  runStore: RunStore,
  recipe: Recipe,
  seconds: number,
): Promise<RunResult> {
  const { runId } = runStore;
  const learner = await runStore.readMetrics({ committedOnly: true });
  const curve = curveOf([...(await startRows(runStore)), ...learner]);
  const start = curve.find((p) => p.step === 0);
  const final = curve.at(-1);
  if (!start || !final || final.step !== recipe.train.steps) {
    throw new Error(`run ${runId} ended without its final evaluation (step ${recipe.train.steps})`);
  }
  return {
    seed: recipe.seed,
    runId,
    successRate: final.successRate,
    successes: final.successes,
    tasks: final.tasks,
    startSuccessRate: start.successRate,
    meanTeamReturn: final.meanTeamReturn,
    samples: sumOf(learner, "samples"),
    steps: recipe.train.steps,
    seconds,
    rlSeconds: sumOf(learner, "seconds"),
    curve,
  };
}

/**
 * The held-out learning curve of a stored run: the start evaluation (`eval-start`, step 0) and
 * every `eval/…` of a committed step s (evaluated after it, so at RL step s + 1).
 */
export async function runCurve(store: ObjectStore, runId: string): Promise<EvalPoint[]> {
  const runStore = new RunStore(store, runId);
  return curveOf([...(await startRows(runStore)), ...(await runStore.readMetrics({ committedOnly: true }))]);
}

/** The start evaluation is written before step 0 commits (or ever does, without RL): read it uncommitted. */
async function startRows(runStore: RunStore): Promise<MetricsRow[]> {
  return (await runStore.readMetrics()).filter((row) => row.source === "eval-start");
}

function curveOf(rows: readonly MetricsRow[]): EvalPoint[] {
  const byStep = new Map<number, EvalPoint>();
  for (const row of rows) {
    const prefix = row.source === "eval-start" ? "" : "eval/";
    const point = evalPoint(row.source === "eval-start" ? 0 : row.step + 1, row.metrics, prefix);
    if (point) byStep.set(point.step, point);
  }
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}

function evalPoint(step: number, metrics: MetricsRow["metrics"], prefix: string): EvalPoint | undefined {
  const num = (name: string) => {
    const v = metrics[`${prefix}${name}`];
    return typeof v === "number" ? v : undefined;
  };
  const successRate = num("successRate");
  const tasks = num("tasks");
  if (successRate === undefined || tasks === undefined) return undefined;
  return {
    step,
    successRate,
    // Stored as a rate of `tasks` episodes: the count is exact after rounding.
    successes: Math.round(successRate * tasks),
    tasks,
    ci95: [num("ci95Low") ?? 0, num("ci95High") ?? 1],
    meanTeamReturn: num("meanTeamReturn") ?? 0,
  };
}

function sumOf(rows: readonly MetricsRow[], name: string): number {
  return rows.reduce(
    (n, row) =>
      n +
      (row.source === "learner" && typeof row.metrics[name] === "number" ? (row.metrics[name] as number) : 0),
    0,
  );
}
