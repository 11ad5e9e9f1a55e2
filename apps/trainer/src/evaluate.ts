/**
 * Held-out evaluation: one episode per test task with the current policies (@troupe/core's episode
 * runner, the loop of GRPO rollouts and of serving), reported as the success rate with a 95%
 * Wilson interval. Test tasks depend only on the environment's options, never on the run seed, so
 * every run and every step is measured on the same tasks. The sampling it takes is sampling.ts's
 * `evalSampling`.
 */
import {
  type PolicySet,
  runEpisodes,
  summarizeEpisode,
  type Task,
  type Team,
  type TeamSampling,
} from "@troupe/core";
import type { TrainerEnvironment } from "./envs.ts";
import { wilson } from "./reports/statistics.ts";

export interface EvalResult {
  readonly tasks: number;
  readonly successes: number;
  readonly successRate: number;
  /** 95% Wilson score interval of the success rate. */
  readonly ci95: readonly [number, number];
  readonly meanTeamReturn: number;
  readonly meanTurns: number;
}

/** What one held-out evaluation plays: the team with these policies on these tasks. */
export interface EvaluateOptions {
  readonly trainerEnv: TrainerEnvironment;
  readonly team: Team;
  readonly policies: PolicySet;
  readonly tasks: readonly Task<unknown>[];
  /** The team's and each role's sampling (sampling.ts, evalSampling). */
  readonly sampling: TeamSampling;
  /** The run seed: the episodes' request seeds derive from it. */
  readonly seed: number;
}

export async function evaluate(options: EvaluateOptions): Promise<EvalResult> {
  const { trainerEnv, team, policies, tasks, sampling, seed } = options;
  const played = await runEpisodes(
    { runId: "eval", step: 0, seed, env: trainerEnv.evaluationEnv, team, policies, ...sampling },
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
