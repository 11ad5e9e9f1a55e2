/**
 * Held-out evaluation: one episode per test task with the current policies (@troupe/core's episode
 * runner, the loop of parallel rollouts and of serving), reported as the success rate with a 95%
 * Wilson interval. Test tasks depend only on the environment's options,
 * never on the run seed, so every run and every step is measured on the same tasks.
 *
 * Also the recipe's sampling as the episode runner takes it: the team's, and each role's own
 * (`sampling.roles`), for rollouts and for evaluation.
 */
import {
  type PolicySet,
  runEpisodes,
  type SamplingParams,
  samplingParams,
  summarizeEpisode,
  type Task,
  type Team,
  type TeamSampling,
} from "@troupe/core";
import type { TrainerEnvironment } from "./envs.ts";
import { type Recipe, RecipeError } from "./recipe.ts";
import { wilson } from "./reports/statistics.ts";

/** The sampling of rollouts: the recipe's, and the roles of `sampling.roles` with their own fields over it. */
export function rolloutSampling(recipe: Recipe): TeamSampling {
  return teamSampling(recipe);
}

/**
 * The sampling of held-out evaluation: the rollouts', at `train.evalTemperature` (a role's own
 * `evalTemperature` first); with `temperature`, every role at that temperature (one sampled
 * episode, as the compare reports beside the greedy one).
 */
export function evalSampling(recipe: Recipe, temperature?: number): TeamSampling {
  return teamSampling(recipe, (roleEval) => temperature ?? roleEval ?? recipe.train.evalTemperature);
}

/** The team's sampling and each listed role's (its fields over the team's), at `temperatureOf` when given. */
function teamSampling(
  recipe: Recipe,
  temperatureOf?: (roleEvalTemperature?: number) => number,
): TeamSampling {
  const { roles, ...team } = recipe.sampling;
  const at = (fields: typeof team, roleEval?: number) =>
    samplingParams(temperatureOf ? { ...fields, temperature: temperatureOf(roleEval) } : fields);
  const sampling = at(team);
  if (roles === undefined) return { sampling };
  const roleSampling: Record<string, SamplingParams> = {};
  for (const [role, { evalTemperature, ...own }] of Object.entries(roles)) {
    roleSampling[role] = at({ ...team, ...own }, evalTemperature);
  }
  return { sampling, roleSampling };
}

/** `sampling.roles` may name only the team's roles: one error line naming the stranger, before any work. */
export function checkRoleSampling(recipe: Recipe, team: Team): void {
  for (const role of Object.keys(recipe.sampling.roles ?? {})) {
    if (!team.roles.some((r) => r.id === role)) {
      throw new RecipeError(
        `recipe: sampling.roles.${role}: the team has no role "${role}" (roles: ${team.roles.map((r) => r.id).join(", ")})`,
      );
    }
  }
}

/** The most tokens any role may answer with: what a memory plan must make room for. */
export function longestAnswer(recipe: Recipe): number {
  const { roles, ...team } = recipe.sampling;
  const base = samplingParams(team).maxTokens;
  return Math.max(base, ...Object.values(roles ?? {}).map((r) => r.maxTokens ?? base));
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

export async function evaluate(
  trainerEnv: TrainerEnvironment,
  team: Team,
  policies: PolicySet,
  tasks: readonly Task<unknown>[],
  sampling: TeamSampling,
  seed: number,
): Promise<EvalResult> {
  const played = await runEpisodes(
    { runId: "eval", step: 0, seed, env: trainerEnv.env, team, policies, ...sampling },
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
