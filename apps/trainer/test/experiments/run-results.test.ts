/**
 * A finished run's result read back from its stored metrics: the start evaluation (step 0, written
 * before any commit), each committed step's `eval/…` at RL step s + 1, uncommitted steps left out,
 * samples and RL seconds summed over the learner's committed rows.
 */
import { FileStore, RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { finishedRunResult, RunResultSchema, runCurve } from "../../src/experiments/run-results.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { TINY_ONE_TURN, tempRoot } from "../tiny.ts";

const root = tempRoot("run-results");
const evalOf = (rate: number, tasks: number, low: number, high: number, ret: number, prefix = "") => ({
  [`${prefix}successRate`]: rate,
  [`${prefix}tasks`]: tasks,
  [`${prefix}ci95Low`]: low,
  [`${prefix}ci95High`]: high,
  [`${prefix}meanTeamReturn`]: ret,
});

/** A run of `committed` steps (each with its evaluation) and one more step written but never committed. */
async function storedRun(runId: string, committed: number) {
  const store = new FileStore(root);
  const run = new RunStore(store, runId);
  await run.writeMetrics(0, evalOf(0.25, 8, 0.07, 0.59, 0.1), "eval-start");
  for (let step = 0; step <= committed; step++) {
    const rate = 0.5 + step / 8;
    await run.writeMetrics(step, {
      samples: 12,
      seconds: 1.5,
      loss: 0.3,
      ...evalOf(rate, 8, 0.2, 0.8, rate, "eval/"),
    });
    if (step < committed) await run.commitStep(step, {});
  }
  return { store, run };
}

describe("run results", () => {
  it("the curve: the start at step 0, committed step s at s + 1, successes from rate × tasks", async () => {
    const { store } = await storedRun("curve", 2);
    expect(await runCurve(store, "curve")).toEqual([
      { step: 0, successRate: 0.25, successes: 2, tasks: 8, ci95: [0.07, 0.59], meanTeamReturn: 0.1 },
      { step: 1, successRate: 0.5, successes: 4, tasks: 8, ci95: [0.2, 0.8], meanTeamReturn: 0.5 },
      { step: 2, successRate: 0.625, successes: 5, tasks: 8, ci95: [0.2, 0.8], meanTeamReturn: 0.625 },
    ]);
  });

  it("a finished run: the final and start evaluations, samples and RL seconds of committed steps only", async () => {
    const { run } = await storedRun("finished", 2);
    const recipe = loadRecipeText(`name: r\nseed: 4\n${TINY_ONE_TURN}\ntrain: { steps: 2 }\n`);
    const result = await finishedRunResult(run, recipe, 42);
    expect(result).toEqual({
      seed: 4,
      runId: "finished",
      successRate: 0.625,
      successes: 5,
      tasks: 8,
      startSuccessRate: 0.25,
      meanTeamReturn: 0.625,
      samples: 24,
      steps: 2,
      seconds: 42,
      rlSeconds: 3,
      curve: await runCurve(run.store, "finished"),
    });
    expect(RunResultSchema.parse(result)).toEqual(result);
    // The recipe asks for a step the run never evaluated: an error naming the run and the step.
    const longer = loadRecipeText(`name: r\n${TINY_ONE_TURN}\ntrain: { steps: 3 }\n`);
    await expect(finishedRunResult(run, longer, 1)).rejects.toThrow(
      "run finished ended without its final evaluation (step 3)",
    );
  });
});
