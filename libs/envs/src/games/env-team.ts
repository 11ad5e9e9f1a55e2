/** The team that plays a game environment: its protocol's roles, in turn order. */
import type { Team } from "@troupe/core";
import type { GameEnvironment } from "./episode.ts";
import { ROLE_PROTOCOLS } from "./game-environment.ts";

export interface EnvTeamOptions {
  /** `shared`: one policy for all roles (default); `per-role`: a policy per role, named after it. */
  readonly policies?: "shared" | "per-role";
  readonly name?: string;
  /** Defaults to the environment's `maxTurns` (they must agree for the failure penalty to land). */
  readonly maxTurns?: number;
}

/** The team matching a game environment: its roles in turn order, sequential, its `maxTurns`. */
export function envTeam(
  env: Pick<GameEnvironment<unknown, unknown>, "name" | "agents" | "roles" | "maxTurns">,
  options: EnvTeamOptions = {},
): Team {
  const perRole = options.policies === "per-role";
  const { descriptions } = ROLE_PROTOCOLS[env.roles];
  return {
    name: options.name ?? `${env.name}-${env.roles}`,
    roles: env.agents.map((id) => ({
      id,
      policy: perRole ? id : "shared",
      description: descriptions[id] ?? id,
    })),
    turnOrder: "sequential",
    maxTurns: options.maxTurns ?? env.maxTurns,
  };
}
