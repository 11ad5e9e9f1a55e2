/**
 * What other apps (apps/eval) reuse of the trainer: recipes, engines and checkpoints of runs, the
 * held-out evaluation's sampling, and the statistics and tables of compare and sweep.
 */
export { createEngine } from "./engines.ts";
export { recipeEnvironment } from "./envs.ts";
export { evalSampling, wilson } from "./evaluate.ts";
export { loadRecipeText, parseRecipe } from "./recipe.ts";
export { markdownTable, table } from "./reporter.ts";
export { runRecipe } from "./run-recipe.ts";
export { seedInterval } from "./stats.ts";
export { policySet, restoreStep } from "./train.ts";
export { cachedWarmStart, parseRunRef, WARM_START_REF } from "./warm-start.ts";
