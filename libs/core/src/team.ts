import { z } from "zod";
import type { AgentId, Environment } from "./environment.ts";

export type PolicyId = string;

/** A role in a team: which agent of the environment it plays and which policy speaks for it. */
export interface Role {
  readonly id: AgentId;
  readonly policy: PolicyId;
  readonly description?: string;
}

/**
 * How agents take turns within one turn of the workflow:
 * - `sequential`: roles act one after another, each seeing the previous role's result;
 * - `parallel`: all roles act on the same state, their actions applied together.
 */
export const TurnOrderSchema = z.enum(["sequential", "parallel"]);
export type TurnOrder = z.infer<typeof TurnOrderSchema>;

/** A team (workflow): its roles in turn order, how they take turns, and how many turns at most. */
export interface Team {
  readonly name: string;
  readonly roles: readonly Role[];
  readonly turnOrder: TurnOrder;
  readonly maxTurns: number;
}

export const RoleSchema = z.object({
  id: z.string().min(1),
  policy: z.string().min(1),
  description: z.string().optional(),
});

export const TeamSchema = z
  .object({
    name: z.string().min(1),
    roles: z.array(RoleSchema).min(1, "a team needs at least one role"),
    turnOrder: TurnOrderSchema,
    maxTurns: z.number().int().min(1),
  })
  .superRefine((team, ctx) => {
    const seen = new Set<string>();
    team.roles.forEach((role, i) => {
      if (seen.has(role.id)) {
        ctx.addIssue({ code: "custom", path: ["roles", i, "id"], message: `duplicate role id "${role.id}"` });
      }
      seen.add(role.id);
    });
  });

/**
 * The stages of one turn: each stage is the set of agents that act together on the same state.
 * Sequential → one agent per stage; parallel → one stage with every agent.
 */
export function turnStages(team: Team): AgentId[][] {
  const ids = team.roles.map((r) => r.id);
  return team.turnOrder === "parallel" ? [ids] : ids.map((id) => [id]);
}

/** The distinct policies a team uses, in first-use order. */
export function teamPolicies(team: Team): PolicyId[] {
  return [...new Set(team.roles.map((r) => r.policy))];
}

export function roleOf(team: Team, agent: AgentId): Role {
  const role = team.roles.find((r) => r.id === agent);
  if (!role) throw new Error(`team "${team.name}" has no role "${agent}"`);
  return role;
}

/** Checks a team against an environment: valid shape, and its roles are exactly the environment's agents. */
export function checkTeam(team: Team, env: Pick<Environment, "name" | "agents">): Team {
  if (fitted.get(team) === env) return team;
  const parsed = TeamSchema.safeParse(team);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`team "${team.name}": ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  const roleIds = new Set(team.roles.map((r) => r.id));
  const missing = env.agents.filter((a) => !roleIds.has(a));
  const extra = [...roleIds].filter((r) => !env.agents.includes(r));
  if (missing.length || extra.length) {
    throw new Error(
      `team "${team.name}" does not fit environment "${env.name}" (agents: ${env.agents.join(", ")})` +
        (missing.length ? `; missing roles: ${missing.join(", ")}` : "") +
        (extra.length ? `; unknown roles: ${extra.join(", ")}` : ""),
    );
  }
  fitted.set(team, env);
  return team;
}

/**
 * The environment each team object was last found to fit: a server checks the same team against
 * the same environment for every solve (a zod parse each time), and teams are data nothing
 * mutates after they are made.
 */
const fitted = new WeakMap<Team, Pick<Environment, "name" | "agents">>();

/** Every role speaks through one policy. */
export function sharedPolicyTeam(
  base: Omit<Team, "roles">,
  agents: readonly AgentId[],
  policy = "shared",
): Team {
  return { ...base, roles: agents.map((id) => ({ id, policy })) };
}

/** Each role gets its own policy, named after the role. */
export function perRoleTeam(base: Omit<Team, "roles">, agents: readonly AgentId[]): Team {
  return { ...base, roles: agents.map((id) => ({ id, policy: id })) };
}
