/**
 * What other apps (apps/eval) reuse of the trainer: recipes, engines and checkpoints of runs, the
 * held-out evaluation's sampling and tasks, the statistics and tables of compare and sweep, and
 * the run report.
 */
export { createEngine } from "./engines.ts";
export { recipeEnvironment } from "./envs.ts";
export { type EvalResult, evalSampling, wilson } from "./evaluate.ts";
export { loadRecipeText, parseRecipe, type Recipe, RecipeError } from "./recipe.ts";
export { formatDuration, markdownTable, table } from "./reporter.ts";
export { type RunResult, runCurve, runRecipe } from "./run-recipe.ts";
export { seedInterval } from "./stats.ts";
export { evalTasks, policySet, restoreStep, type TrainReporter } from "./train.ts";
export { cachedWarmStart, parseRunRef, WARM_START_REF, warmStartId } from "./warm-start.ts";
