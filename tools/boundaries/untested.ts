/**
 * The modules that have no test file at their mirrored path (`src/a/b.ts` → `test/a/b.test.ts`),
 * each with why: only modules without logic of their own. check.ts fails on any other module
 * without its test, and on an entry here that no longer applies (the module is gone, or has its
 * test now).
 *
 *   node --import tsx tools/boundaries/check.ts --untested   lists every module without its test
 */

/** Modules without logic of their own (re-exports, type declarations): nothing to test. */
export const NEEDS_NO_TEST: Readonly<Record<string, string>> = {
  "libs/charts/src/index.ts": "re-exports",
  "libs/core/src/environment.ts": "types only",
  "libs/core/src/index.ts": "re-exports",
  "libs/core/src/testing.ts": "re-exports",
  "libs/engine/src/index.ts": "re-exports",
  "libs/engine/src/types.ts": "types only, and defaultOptimizerConfig (a constant)",
  "libs/engine-onnx/src/index.ts": "re-exports",
  "libs/engine-openai/src/index.ts": "re-exports",
  "libs/engine-torch/src/index.ts": "re-exports",
  "libs/envs/src/answer.ts": "types only",
  "libs/envs/src/coding/index.ts": "re-exports",
  "libs/envs/src/games/index.ts": "re-exports",
  "libs/envs/src/games/plan-path-puzzle.ts": "types only",
  "libs/envs/src/index.ts": "re-exports",
  "libs/envs/src/math/index.ts": "re-exports",
  "libs/envs/src/writing/index.ts": "re-exports",
  "libs/rl/src/index.ts": "re-exports",
  "libs/sandbox/src/index.ts": "re-exports",
  "libs/storage/src/index.ts": "re-exports",
  "libs/storage/src/node.ts": "re-exports",
  "libs/teams/src/answer.ts": "types only",
  "libs/teams/src/index.ts": "re-exports",
  "apps/api/src/index.ts": "re-exports",
  "apps/eval/src/index.ts": "re-exports",
  "apps/trainer/src/index.ts": "re-exports",
  "apps/trainer/src/run/context.ts": "types only",
};
