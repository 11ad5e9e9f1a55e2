/**
 * `trainer:sweep`, the running: every (point, seed) of a planned grid (sweep-grid.ts) is a normal
 * run `<sweep id>-<point id>-s<seed>` in the recipe's store, run with `runRecipe` (warm start + RL,
 * resumable); its result is kept in runs/<sweep id>/points/<point id>-s<seed>.json and read back
 * on a rerun with the same id. Runs go seed by seed (every point's seed 1, then seed 2, …), so an
 * early stop still compares points.
 */
import { stableHash } from "@troupe/core";
import type { ObjectStore } from "@troupe/storage";
import { RecipeError, sftBeforeLaterDefaults } from "../recipe.ts";
import type { TrainReporter } from "../run/context.ts";
import { runRecipe } from "./run-recipe.ts";
import { type SweepPlan, seedRecipe } from "./sweep-grid.ts";
import { type PointResult, PointResultSchema } from "./sweep-results.ts";

export const resultKey = (sweepId: string, pointId: string, seed: number) =>
  `runs/${sweepId}/points/${pointId}-s${seed}.json`;
export const sweepRunId = (sweepId: string, pointId: string, seed: number) =>
  `${sweepId}-${pointId}-s${seed}`;

export interface SweepOptions {
  readonly plan: SweepPlan;
  readonly store: ObjectStore;
  readonly reporter: TrainReporter;
  /** Asked after every committed step: true stops the sweep there (the run resumes on a rerun). */
  readonly stopRequested?: (step: number) => boolean;
}

export interface SweepOutcome {
  /** Finished runs, seed by seed, each seed's points in grid order. */
  readonly results: PointResult[];
  /** True when stopRequested ended the sweep before every run had finished. */
  readonly stopped: boolean;
}

/** Runs (or reads back) every (point, seed), one at a time (runs share the cores). */
export async function sweep(options: SweepOptions): Promise<SweepOutcome> {
  const { plan, store, reporter } = options;
  const results: PointResult[] = [];
  const total = plan.points.length * plan.seeds.length;
  let index = 0;
  for (const seed of plan.seeds) {
    for (const point of plan.points) {
      index++;
      const recipe = seedRecipe(point, seed);
      const recipeHash = stableHash(recipe);
      // A point recorded before the sft section had its later defaults hashed it without them.
      const earlierHash = recipe.sft
        ? stableHash({ ...recipe, sft: sftBeforeLaterDefaults(recipe.sft) })
        : recipeHash;
      const key = resultKey(plan.sweepId, point.id, seed);
      const runId = sweepRunId(plan.sweepId, point.id, seed);
      if (await store.head(key)) {
        const stored = PointResultSchema.parse(JSON.parse(new TextDecoder().decode(await store.get(key))));
        if (stored.recipeHash !== recipeHash && stored.recipeHash !== earlierHash) {
          throw new RecipeError(
            `sweep ${plan.sweepId}: point "${point.name}" seed ${seed} was run with another recipe ` +
              "(the grid, the base recipe or --set changed): pass a new --id",
          );
        }
        reporter.note(`sweep ${index}/${total}: ${point.name} seed ${seed} already done (${runId})`);
        results.push(stored);
        continue;
      }
      reporter.note(`sweep ${index}/${total}: ${point.name} seed ${seed} (run ${runId})`);
      const run = await runRecipe({
        recipe,
        runId,
        store,
        reporter,
        ...(options.stopRequested ? { stopRequested: options.stopRequested } : {}),
      });
      if (!run) return { results, stopped: true };
      const result: PointResult = { point: point.name, pointId: point.id, recipeHash, ...run };
      await store.put(key, new TextEncoder().encode(`${JSON.stringify(result, null, 2)}\n`));
      results.push(result);
    }
  }
  return { results, stopped: false };
}
