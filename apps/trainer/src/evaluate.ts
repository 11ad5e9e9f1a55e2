/**
 * Held-out evaluation: one episode per test task with the current policies (@troupe/rl's episode
 * runner, the loop of parallel rollouts and of serving), reported as the success rate with a 95%
 * Wilson interval. Test tasks depend only on the environment's options,
 * never on the run seed, so every run and every step is measured on the same tasks.
 */
import { type PolicySet, type SamplingParams, samplingParams, type Task, type Team } from "@troupe/core";
import { runEpisodes, summarizeEpisode } from "@troupe/rl";
import type { TrainerEnvironment } from "./envs.ts";
import type { Recipe } from "./recipe.ts";

/** The sampling of held-out evaluation: the recipe's, at `train.evalTemperature`. */
export function evalSampling(recipe: Recipe): SamplingParams {
  return samplingParams({ ...recipe.sampling, temperature: recipe.train.evalTemperature });
}

export interface EvalResult {
  readonly tasks: number;
  readonly successes: number;
  readonly successRate: number;
  /** 95% Wilson score interval of the success rate. */
  readonly ci95: readonly [number, number];
  readonly meanTeamReturn: number;
  readonly meanTurns: number;
}

/** Wilson score interval for k successes in n trials (z = 1.96). */
export function wilson(k: number, n: number, z = 1.96): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const denom = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / denom;
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

export async function evaluate(
  trainerEnv: TrainerEnvironment,
  team: Team,
  policies: PolicySet,
  tasks: readonly Task<unknown>[],
  sampling: SamplingParams,
  seed: number,
): Promise<EvalResult> {
  const played = await runEpisodes(
    { runId: "eval", step: 0, seed, env: trainerEnv.env, team, policies, sampling },
    tasks,
  );
  const episodes = played.map(summarizeEpisode);
  const successes = episodes.filter((e) => e.success).length;
  const n = episodes.length;
  return {
    tasks: n,
    successes,
    successRate: n ? successes / n : 0,
    ci95: wilson(successes, n),
    meanTeamReturn: n ? episodes.reduce((s, e) => s + e.teamReturn, 0) / n : 0,
    meanTurns: n ? episodes.reduce((s, e) => s + e.turns, 0) / n : 0,
  };
}
