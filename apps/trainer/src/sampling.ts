/**
 * The recipe's sampling as the episode runner takes it: the team's, and each role's own
 * (`sampling.roles`), for rollouts and for held-out evaluation; the check that `sampling.roles`
 * names only the team's roles; and the longest answer any role may give, which the engine's
 * memory plan makes room for.
 */
import { type SamplingParams, samplingParams, type Team, type TeamSampling } from "@troupe/core";
import { type Recipe, RecipeError } from "./recipe.ts";

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
