/**
 * How a team plays tasks: the context an episode runs in, batched generation across policies,
 * immutable states, and the episode loop itself. A team's agents generate with their own policies
 * from their own observations, stage by stage as `turnStages(team)` orders them (sequential: one
 * agent after the other, each seeing the previous one's step; parallel: all on the same state).
 *
 * Every episode loop runs here: parallel rollouts (G episodes per task, @troupe/rl), the
 * trainer's held-out evaluation (one per test task) and serving (`solve` in @troupe/teams, one
 * episode with a turn event per agent as it happens and a deadline). One loop means one seed
 * path, so a served episode with the run's seed and the evaluation's sampling is the evaluation's
 * episode. It lives in core, beside the environment, team and policy it runs, so serving plays
 * episodes without the RL package; the rollout strategies build samples on top of it.
 *
 * Batching: at each stage the live episodes of every task ask together — one `generate` per
 * policy — and are then stepped one by one in task order. Request seeds come from (run seed,
 * step, task, episode, turn, agent), never from batch positions.
 */
import type { AgentId, Environment, StepResult } from "./environment.ts";
import { deepFreeze } from "./hash.ts";
import type { Observation } from "./messages.ts";
import type { Completion, PolicySet, SamplingParams } from "./policy.ts";
import { deriveSeed, type SeedPart } from "./rng.ts";
import type { Task } from "./task.ts";
import { checkTeam, roleOf, type Team, turnStages } from "./team.ts";

export interface RolloutContext<State = unknown, Payload = unknown> {
  readonly runId: string;
  /** Training step these rollouts are for (recorded in provenance, mixed into every seed). */
  readonly step: number;
  /** Run seed: with the same seed, step and policies, a rollout is identical byte for byte. */
  readonly seed: number;
  readonly env: Environment<State, Payload>;
  readonly team: Team;
  readonly policies: PolicySet;
  /** The sampling of every agent without its own entry in `roleSampling`. */
  readonly sampling: SamplingParams;
  /**
   * An agent's own sampling where its role overrides the team's (a tool agent's short answers, a
   * planner's temperature). Recorded in each sample's provenance like `sampling`.
   */
  readonly roleSampling?: Readonly<Record<AgentId, SamplingParams>>;
  /**
   * Deep-freeze every state the environment returns, so a `step` that mutates its input state
   * throws instead of leaking into sibling branches. On by default; costs a walk over the state.
   */
  readonly freezeStates?: boolean;
}

/** One episode's outcome along the path the strategy followed (AT-GRPO: the selected candidates). */
export interface EpisodeSummary {
  readonly taskId: string;
  readonly episode: number;
  readonly success: boolean;
  /** Sum of team rewards along the episode. */
  readonly teamReturn: number;
  /** Turns taken. */
  readonly turns: number;
}

export function prepareContext<S, P>(ctx: RolloutContext<S, P>, tasks: readonly Task<P>[]): void {
  checkTeam(ctx.team, ctx.env);
  for (const role of ctx.team.roles) {
    if (!ctx.policies[role.policy]) {
      throw new Error(`role "${role.id}" uses policy "${role.policy}", which is not in the policy set`);
    }
  }
  for (const agent of Object.keys(ctx.roleSampling ?? {})) {
    if (!ctx.team.roles.some((r) => r.id === agent)) {
      throw new Error(
        `roleSampling names "${agent}", which is no role of team "${ctx.team.name}" (roles: ${ctx.team.roles.map((r) => r.id).join(", ")})`,
      );
    }
  }
  const seen = new Set<string>();
  for (const task of tasks) {
    if (seen.has(task.id)) throw new Error(`task "${task.id}" appears twice in one rollout batch`);
    seen.add(task.id);
  }
}

/** The state, deep-frozen unless the context opted out (`freezeStates: false`): environments must not mutate it. */
export function freezeState<S>(ctx: RolloutContext<S, unknown>, state: S): S {
  return ctx.freezeStates === false ? state : deepFreeze(state);
}

export async function resetState<S, P>(ctx: RolloutContext<S, P>, task: Task<P>): Promise<S> {
  // Every episode of a task starts from the same state: group members must be comparable.
  return freezeState(ctx, await ctx.env.reset(task, deriveSeed(ctx.seed, "reset", task.id)));
}

export async function stepState<S>(
  ctx: RolloutContext<S, unknown>,
  state: S,
  actions: Readonly<Record<AgentId, string>>,
): Promise<StepResult<S>> {
  const result = await ctx.env.step(state, actions);
  for (const [name, value] of [
    ["teamReward", result.teamReward],
    ...Object.entries(result.localRewards),
  ] as const) {
    if (!Number.isFinite(value))
      throw new Error(`environment "${ctx.env.name}" returned a non-finite ${name}: ${value}`);
  }
  return { ...result, state: freezeState(ctx, result.state) };
}

export interface AgentRequest {
  readonly agent: AgentId;
  readonly observation: Observation;
  readonly seed: number;
}

/** A team's sampling: every agent's, and the roles that sample on their own. */
export type TeamSampling = Pick<RolloutContext, "sampling" | "roleSampling">;

/** The sampling an agent generates with: its role's own, else the context's. */
export function samplingOf(
  ctx: Pick<RolloutContext, "sampling" | "roleSampling">,
  agent: AgentId,
): SamplingParams {
  return ctx.roleSampling?.[agent] ?? ctx.sampling;
}

/**
 * Generates completions for requests of any agents: one batched call per policy and sampling
 * (agents that share a policy share a call unless their roles sample with other params objects),
 * answers in request order.
 */
export async function generateForAgents(
  ctx: RolloutContext,
  requests: readonly AgentRequest[],
): Promise<Completion[]> {
  // one call per (policy, sampling object): roles given the same params object share a batch
  const calls: { policyId: string; sampling: SamplingParams; indices: number[] }[] = [];
  requests.forEach((r, i) => {
    const policyId = roleOf(ctx.team, r.agent).policy;
    const sampling = samplingOf(ctx, r.agent);
    const call = calls.find((c) => c.policyId === policyId && c.sampling === sampling);
    if (call) call.indices.push(i);
    else calls.push({ policyId, sampling, indices: [i] });
  });
  const out: Completion[] = new Array(requests.length);
  await Promise.all(
    calls.map(async ({ policyId, sampling, indices }) => {
      const policy = ctx.policies[policyId]!;
      const completions = await policy.generate(
        indices.map((i) => ({ observation: requests[i]!.observation, seed: requests[i]!.seed })),
        sampling,
      );
      if (completions.length !== indices.length) {
        throw new Error(
          `policy "${policyId}" returned ${completions.length} completions for ${indices.length} prompts`,
        );
      }
      completions.forEach((c, k) => {
        if (c.logprobs.length !== c.tokenIds.length) {
          throw new Error(
            `policy "${policyId}": ${c.logprobs.length} log-probs for ${c.tokenIds.length} tokens`,
          );
        }
        out[indices[k]!] = c;
      });
    }),
  );
  return out;
}

/**
 * Seed of a generation request, from its place in the rollout (never from batch position):
 * `stream` names the loop that asks (a strategy's name), `path` the place in it.
 */
export function requestSeed(ctx: RolloutContext, stream: string, ...path: SeedPart[]): number {
  return deriveSeed(ctx.seed, stream, ctx.step, ...path);
}

/**
 * The seed stream of episode requests: the text hashed into every request seed of this loop (GRPO
 * rollouts, evaluation, served teams). It is a hash input, not a name: the text is the one the
 * loop's strategy was called when the first runs were recorded, and it stays, because another
 * text would re-seed every sampled episode and no run, evaluation or transcript would reproduce.
 */
export const EPISODE_SEED_STREAM = "parallel";

/** One agent's action in a step: what it saw, the seed it sampled with, what it said. */
export interface AgentAction {
  readonly agent: AgentId;
  readonly observation: Observation;
  readonly seed: number;
  readonly completion: Completion;
}

/** One environment step: a turn stage's agents acted together. */
export interface EpisodeStep<S> {
  readonly turn: number;
  /** The stage's agents in stage order. */
  readonly acted: readonly AgentAction[];
  /** The joint action the environment was stepped with: agent → text. */
  readonly actions: Readonly<Record<AgentId, string>>;
  readonly result: StepResult<S>;
  /** Wall time of the batched generation this step's actions came from. */
  readonly generationMs: number;
}

export interface Episode<S> {
  readonly task: Task<unknown>;
  /** Index among the task's episodes (0 for a single episode). */
  readonly index: number;
  state: S;
  done: boolean;
  /** Some step reported success. */
  success: boolean;
  /** Some step reported success or failure (environments that cannot judge never do). */
  judged: boolean;
  /** Turns taken. */
  turns: number;
  readonly steps: EpisodeStep<S>[];
}

export interface EpisodeHooks<S> {
  /** Sees the episodes at their initial states, before any generation. */
  readonly onStart?: (episodes: readonly Episode<S>[]) => void;
  /** Sees every stage's requests before they are generated, e.g. to refuse a prompt that is too long. */
  readonly beforeGenerate?: (requests: readonly AgentRequest[]) => void;
  /** Wraps every generation and environment step, e.g. to race a deadline. */
  readonly guard?: <T>(work: Promise<T>) => Promise<T>;
  /** Called after each step of an episode, as it happens. */
  readonly onStep?: (episode: Episode<S>, step: EpisodeStep<S>) => void;
}

/**
 * Plays `episodesPerTask` episodes of every task to the end (done, or `ctx.team.maxTurns` turns).
 * The episodes of one task start from one reset state, so they are comparable (a group).
 */
export async function runEpisodes<S, P>(
  ctx: RolloutContext<S, P>,
  tasks: readonly Task<P>[],
  episodesPerTask = 1,
  hooks: EpisodeHooks<S> = {},
): Promise<Episode<S>[]> {
  prepareContext(ctx, tasks);
  if (!Number.isInteger(episodesPerTask) || episodesPerTask < 1) {
    throw new Error(`episodes per task must be a positive integer, got ${episodesPerTask}`);
  }
  const guard = hooks.guard ?? (<T>(work: Promise<T>) => work);
  const episodes: Episode<S>[] = [];
  for (const task of tasks) {
    const initial = await resetState(ctx, task);
    for (let index = 0; index < episodesPerTask; index++) {
      episodes.push({
        task,
        index,
        state: initial,
        done: false,
        success: false,
        judged: false,
        turns: 0,
        steps: [],
      });
    }
  }
  hooks.onStart?.(episodes);
  const stages = turnStages(ctx.team);
  for (let turn = 0; turn < ctx.team.maxTurns; turn++) {
    for (const stage of stages) {
      const live = episodes.filter((ep) => !ep.done);
      if (live.length === 0) break;
      const requests = live.flatMap((ep) =>
        stage.map((agent) => ({
          agent,
          observation: ctx.env.observe(ep.state, agent),
          seed: requestSeed(ctx, EPISODE_SEED_STREAM, ep.task.id, ep.index, turn, agent),
        })),
      );
      hooks.beforeGenerate?.(requests);
      const started = performance.now();
      const outputs = await guard(generateForAgents(ctx, requests));
      const generationMs = performance.now() - started;
      // Requests are live × stage, episode-major: episode e's agent j asked request e·|stage| + j.
      const moves = live.map((_, e) => {
        const acted: AgentAction[] = [];
        const actions: Record<AgentId, string> = {};
        for (const [j, agent] of stage.entries()) {
          const request = requests[e * stage.length + j]!;
          const completion = outputs[e * stage.length + j]!;
          acted.push({ agent, observation: request.observation, seed: request.seed, completion });
          actions[agent] = completion.text;
        }
        return { acted, actions };
      });
      // Every live episode steps at once: an environment that runs code (the sandbox) runs the
      // programs in parallel up to its own concurrency instead of one after another. A step is a
      // function of (state, actions), so the results are those of one at a time, taken in order.
      const results = await guard(
        Promise.all(live.map((ep, e) => stepState(ctx, ep.state, moves[e]!.actions))),
      );
      for (const [e, ep] of live.entries()) {
        const { acted, actions } = moves[e]!;
        const result = results[e]!;
        const step: EpisodeStep<S> = { turn, acted, actions, result, generationMs };
        ep.steps.push(step);
        ep.state = result.state;
        ep.turns = turn + 1;
        if (result.success !== undefined) ep.judged = true;
        if (result.success) ep.success = true;
        if (result.done) ep.done = true;
        hooks.onStep?.(ep, step);
      }
    }
  }
  return episodes;
}

/** An episode's outcome: success, the sum of its team rewards, turns taken. */
export function summarizeEpisode(episode: Episode<unknown>): EpisodeSummary {
  return {
    taskId: episode.task.id,
    episode: episode.index,
    success: episode.success,
    teamReturn: episode.steps.reduce((s, x) => s + x.result.teamReward, 0),
    turns: episode.turns,
  };
}
