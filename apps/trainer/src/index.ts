/**
 * What other apps (apps/eval) reuse of the trainer: recipes, engines and checkpoints of runs, the
 * held-out evaluation's sampling, and the statistics and tables of compare and sweep.
 */
export { createEngine, policySet } from "./engines.ts";
export { recipeEnvironment } from "./envs.ts";
export { runRecipe } from "./experiments/run-recipe.ts";
export { loadRecipeText, parseRecipe } from "./recipe.ts";
export { loadRecipeFile, parseRunConfig } from "./recipe-files.ts";
export { markdownTable, table } from "./reports/reporter.ts";
export { seedInterval, wilson } from "./reports/statistics.ts";
export { restoreStep } from "./run/checkpoints.ts";
export { cachedWarmStart, parseRunRef, WARM_START_REF } from "./run/warm-start.ts";
export { evalSampling } from "./sampling.ts";
