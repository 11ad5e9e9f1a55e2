/**
 * `trainer:compare`, the running: every arm × seed of compare-arms.ts, each a full run (warm start
 * + RL) in the recipe's store, one after another, with its result kept in
 * runs/<compare id>/arms/<arm>-s<seed>.json. A compare is resumable: finished arms are read back,
 * an interrupted run resumes from its newest committed step. compare-results.ts makes the table.
 */
import { mean, runEpisodes, type Team } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import { meanPassAtK } from "@troupe/envs";
import { type ObjectStore, RunStore } from "@troupe/storage";
import { policySet } from "../engines.ts";
import type { TrainerEnvironment } from "../envs.ts";
import { type Recipe, RecipeError } from "../recipe.ts";
import type { TrainReporter } from "../run/context.ts";
import { storedRecipeIs } from "../run/launch.ts";
import { evalSampling } from "../sampling.ts";
import { type Arm, armRecipe } from "./compare-arms.ts";
import { type ArmResult, ArmResultSchema, type Sampled } from "./compare-results.ts";
import { runRecipe } from "./run-recipe.ts";
import { runCurve } from "./run-results.ts";

export interface CompareOptions {
  readonly base: Recipe;
  readonly store: ObjectStore;
  readonly compareId: string;
  readonly arms: readonly Arm[];
  readonly seeds: readonly number[];
  readonly reporter: TrainReporter;
  /** Episodes per held-out task at temperature 1 after each run, for pass@k (0: none). */
  readonly samples?: number;
  /** Read back the finished arm × seed runs and run nothing (`compare --finished`). */
  readonly finishedOnly?: boolean;
}

/** The k of pass@k compare reports (those not above the samples per task). */
export const PASS_KS = [1, 3, 5, 10] as const;

/**
 * Samples the loaded final policies `samples` times on each of the recipe's held-out tasks
 * (temperature 1, the recipe's other sampling settings) and measures what `Sampled` holds.
 */
export async function sampleFinal(
  recipe: Recipe,
  run: { engine: Engine; trainerEnv: TrainerEnvironment; team: Team },
  samples: number,
): Promise<Sampled> {
  const { trainerEnv, team } = run;
  const tasks = trainerEnv.generateTasks("test", recipe.train.evalTasks, 0);
  const episodes = await runEpisodes(
    {
      runId: "compare-samples",
      step: recipe.train.steps,
      seed: recipe.seed,
      env: trainerEnv.evaluationEnv,
      team,
      policies: policySet(run.engine, team, recipe.train.steps),
      // one sampled episode: every role at temperature 1, its own other fields kept
      ...evalSampling(recipe, 1),
    },
    tasks,
    samples,
  );
  const perTask = tasks.map((task) => episodes.filter((e) => e.task === task));
  const passAtK: Record<string, number> = {};
  for (const k of PASS_KS.filter((k) => k <= samples)) {
    passAtK[String(k)] = meanPassAtK(
      perTask.map((eps) => ({ n: eps.length, correct: eps.filter((e) => e.success).length })),
      k,
    );
  }
  const answers = episodes.map((e) =>
    trainerEnv.render(
      e.state,
      e.steps.flatMap((s) =>
        s.acted.map((a) => ({ agent: a.agent, text: a.completion.text, info: s.result.info?.[a.agent] })),
      ),
    ),
  );
  const code = answers.flatMap((a) => (a.kind === "code" ? [a] : []));
  const writing = answers.flatMap((a) => (a.kind === "writing" ? [a] : []));
  return {
    samples,
    tasks: tasks.length,
    passAtK,
    ...(code.length === answers.length && answers.length > 0
      ? {
          testPassRate: mean(
            code.map((a) => (a.tests && a.tests.total > 0 ? a.tests.passed / a.tests.total : 0)),
          ),
        }
      : {}),
    ...(writing.length === answers.length && answers.length > 0
      ? {
          tiers: Object.fromEntries(
            (["structure", "coordination", "vocabulary", "style", "total"] as const).map((tier) => [
              tier,
              mean(writing.map((a) => a.tiers?.[tier] ?? 0)),
            ]),
          ),
        }
      : {}),
  };
}

const armKey = (compareId: string, arm: Arm, seed: number) => `runs/${compareId}/arms/${arm}-s${seed}.json`;

/**
 * Runs (or reads back) every arm × seed, in that order, one at a time (they share the cores).
 * Each is `runRecipe`: resumable, and its result read back from the run's metrics.
 */
export async function compare(options: CompareOptions): Promise<ArmResult[]> {
  const results: ArmResult[] = [];
  for (const arm of options.arms) {
    for (const seed of options.seeds) {
      const key = armKey(options.compareId, arm, seed);
      const recipe = armRecipe(options.base, arm, seed);
      const done = await options.store.head(key);
      if (done) {
        const parsed = ArmResultSchema.parse(
          JSON.parse(new TextDecoder().decode(await options.store.get(key))),
        );
        // A result is this arm's only if its run ran this recipe (wherever the store was then): a
        // compare id reused after the recipe or --set changed would tabulate old runs as new ones.
        if (!(await storedRecipeIs(new RunStore(options.store, parsed.runId), recipe, { anyStore: true }))) {
          throw new RecipeError(
            `compare ${options.compareId}: ${arm} seed ${seed} finished with another recipe (run ${parsed.runId}): ` +
              "rerun with the settings it was run with, or pass a new --id",
          );
        }
        options.reporter.note(`compare: ${arm} seed ${seed} already done (${parsed.runId})`);
        // Results stored before curves were kept: the curve is in the run's metrics.
        results.push(
          parsed.curve ? parsed : { ...parsed, curve: await runCurve(options.store, parsed.runId) },
        );
        continue;
      }
      if (options.finishedOnly) {
        options.reporter.note(`compare: ${arm} seed ${seed} has not finished (left out)`);
        continue;
      }
      options.reporter.note(`compare: ${arm} seed ${seed}`);
      const samples = options.samples ?? 0;
      let sampled: Sampled | undefined;
      const run = await runRecipe({
        recipe,
        runId: `${options.compareId}-${arm}-s${seed}`,
        store: options.store,
        reporter: options.reporter,
        ...(samples > 0
          ? {
              afterRun: async (loaded) => {
                options.reporter.note(`compare: ${arm} seed ${seed}: ${samples} samples per held-out task`);
                sampled = await sampleFinal(recipe, loaded, samples);
              },
            }
          : {}),
      });
      if (!run) throw new Error(`compare: ${arm} seed ${seed} stopped before its last step`);
      const result: ArmResult = { arm, ...run, ...(sampled ? { sampled } : {}) };
      await options.store.put(key, new TextEncoder().encode(`${JSON.stringify(result, null, 2)}\n`));
      results.push(result);
    }
  }
  return results;
}
