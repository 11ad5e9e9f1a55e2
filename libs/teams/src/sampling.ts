/**
 * A solve's sampling, composed in one place: each role samples with its own settings when the
 * manifest gives it some, else with its policy's, and the request's overrides (temperature, topP,
 * maxTokens) go on top of either. The roles that share a policy get one params object, so their
 * generations still share the policy's batch.
 */
import type { AgentId, SamplingParams, Team, TeamSampling } from "@troupe/core";
import type { LoadedTeam } from "./load-team.ts";

/** What a request may override of the served sampling (its seed is the episode's, not a role's). */
export type SamplingOverrides = Partial<Pick<SamplingParams, "temperature" | "topP" | "maxTokens">>;

/** The team's sampling for one request: `sampling` for a role without its own entry, `roleSampling` for every role. */
export function requestSampling(
  loaded: Pick<LoadedTeam, "sampling" | "roleSampling">,
  team: Team,
  overrides: SamplingOverrides,
): Required<TeamSampling> {
  const byPolicy = new Map<string, SamplingParams>();
  for (const role of team.roles) {
    if (!byPolicy.has(role.policy))
      byPolicy.set(role.policy, { ...loaded.sampling[role.policy]!, ...overrides });
  }
  const roleSampling: Record<AgentId, SamplingParams> = {};
  for (const role of team.roles) {
    const own = loaded.roleSampling?.[role.id];
    roleSampling[role.id] = own !== undefined ? { ...own, ...overrides } : byPolicy.get(role.policy)!;
  }
  // Every role has its entry above; `sampling` is the context's shape.
  return { sampling: byPolicy.get(team.roles[0]!.policy)!, roleSampling };
}
