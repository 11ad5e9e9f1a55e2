/**
 * Machinery shared by the rollout strategies: the context a rollout runs in, batched generation
 * across policies, immutable states, and building `Sample` records with full provenance.
 */
import {
  type AgentId,
  type Completion,
  checkTeam,
  deepFreeze,
  deriveSeed,
  type Environment,
  type Observation,
  type PolicySet,
  type Provenance,
  type RewardParts,
  roleOf,
  SAMPLE_SCHEMA_VERSION,
  type Sample,
  type SamplingParams,
  type SeedPart,
  type StepResult,
  type Task,
  type Team,
} from "@troupe/core";

export interface RolloutContext<State = unknown, Payload = unknown> {
  readonly runId: string;
  /** Training step these rollouts are for (recorded in provenance, mixed into every seed). */
  readonly step: number;
  /** Run seed: with the same seed, step and policies, a rollout is identical byte for byte. */
  readonly seed: number;
  readonly env: Environment<State, Payload>;
  readonly team: Team;
  readonly policies: PolicySet;
  readonly sampling: SamplingParams;
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

/** A node of a rollout tree, for inspection, reports and tests. */
export interface RolloutNode {
  /** Child indices from the root. */
  readonly path: readonly number[];
  /** The turn in which the action leading here was taken (0 at the root). */
  readonly turn: number;
  /** The action(s) that led from the parent to this node (empty at the root). */
  readonly actions: Readonly<Record<AgentId, string>>;
  readonly teamReward: number;
  readonly localRewards: Readonly<Record<AgentId, number>>;
  readonly done: boolean;
  readonly success?: boolean;
  /** Per agent: the return of the edge into this node (tree strategies; 0 at the root). */
  readonly returns: Readonly<Record<AgentId, number>>;
  readonly children: RolloutNode[];
}

export interface RolloutResult {
  readonly samples: Sample[];
  readonly episodes: EpisodeSummary[];
  /** One tree per task (and episode, for parallel rollouts). */
  readonly trees: RolloutNode[];
  readonly stats: { readonly completions: number; readonly envSteps: number; readonly leaves: number };
}

export function prepareContext<S, P>(ctx: RolloutContext<S, P>, tasks: readonly Task<P>[]): void {
  checkTeam(ctx.team, ctx.env);
  for (const role of ctx.team.roles) {
    if (!ctx.policies[role.policy]) {
      throw new Error(`role "${role.id}" uses policy "${role.policy}", which is not in the policy set`);
    }
  }
  const seen = new Set<string>();
  for (const task of tasks) {
    if (seen.has(task.id)) throw new Error(`task "${task.id}" appears twice in one rollout batch`);
    seen.add(task.id);
  }
}

/** Returns the state, frozen unless the context opted out. */
export function settle<S>(ctx: RolloutContext<S, unknown>, state: S): S {
  return ctx.freezeStates === false ? state : deepFreeze(state);
}

export async function resetState<S, P>(ctx: RolloutContext<S, P>, task: Task<P>): Promise<S> {
  // Every episode of a task starts from the same state: group members must be comparable.
  return settle(ctx, await ctx.env.reset(task, deriveSeed(ctx.seed, "reset", task.id)));
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
  return { ...result, state: settle(ctx, result.state) };
}

export interface AgentRequest {
  readonly agent: AgentId;
  readonly observation: Observation;
  readonly seed: number;
}

/** Generates completions for requests of any agents: one batched call per policy, answers in request order. */
export async function generateForAgents(
  ctx: RolloutContext,
  requests: readonly AgentRequest[],
): Promise<Completion[]> {
  const byPolicy = new Map<string, number[]>();
  requests.forEach((r, i) => {
    const policyId = roleOf(ctx.team, r.agent).policy;
    const list = byPolicy.get(policyId);
    if (list) list.push(i);
    else byPolicy.set(policyId, [i]);
  });
  const out: Completion[] = new Array(requests.length);
  await Promise.all(
    [...byPolicy.entries()].map(async ([policyId, indices]) => {
      const policy = ctx.policies[policyId]!;
      const completions = await policy.generate(
        indices.map((i) => ({ observation: requests[i]!.observation, seed: requests[i]!.seed })),
        ctx.sampling,
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

/** What a strategy knows of a sample: everything but the advantage, which the controller estimates. */
export interface SampleDraft {
  /** The strategy's registered name (provenance). */
  readonly strategy: string;
  readonly task: Task<unknown>;
  readonly episode: number;
  readonly turn: number;
  readonly agent: AgentId;
  readonly branch: readonly number[];
  readonly candidate: number;
  readonly seed: number;
  readonly observation: Observation;
  readonly completion: Completion;
  readonly reward: RewardParts;
  /** The quantity the advantage estimator compares within the group (see the strategy's file). */
  readonly return: number;
  readonly groupKey: string;
  readonly success?: boolean | undefined;
}

export function buildSample(ctx: RolloutContext, draft: SampleDraft): Sample {
  const policy = ctx.policies[roleOf(ctx.team, draft.agent).policy]!;
  const provenance: Provenance = {
    runId: ctx.runId,
    step: ctx.step,
    strategy: draft.strategy,
    environment: ctx.env.name,
    taskId: draft.task.id,
    split: draft.task.split,
    episode: draft.episode,
    turn: draft.turn,
    agent: draft.agent,
    branch: [...draft.branch],
    candidate: draft.candidate,
    policyId: policy.id,
    policyVersion: policy.version,
    sampling: ctx.sampling,
    seed: draft.seed,
  };
  const sample: Sample = {
    schemaVersion: SAMPLE_SCHEMA_VERSION,
    provenance,
    observation: draft.observation.messages.map((m) => ({ role: m.role, content: m.content })),
    completionText: draft.completion.text,
    promptTokenIds: [...draft.completion.promptTokenIds],
    completionTokenIds: [...draft.completion.tokenIds],
    samplingLogprobs: [...draft.completion.logprobs],
    finishReason: draft.completion.finishReason,
    reward: draft.reward,
    return: draft.return,
    // Not known yet: the controller's advantage stage (estimators.ts) estimates it for the batch.
    advantage: 0,
    groupKey: draft.groupKey,
  };
  return draft.success === undefined ? sample : { ...sample, success: draft.success };
}

/** Reward parts of one agent for one step. */
export function rewardParts(
  result: Pick<StepResult<unknown>, "teamReward" | "localRewards">,
  agent: AgentId,
  weights: { readonly teamWeight: number; readonly localWeight: number },
): RewardParts {
  const team = result.teamReward;
  const local = result.localRewards[agent] ?? 0;
  return { team, local, total: weights.teamWeight * team + weights.localWeight * local };
}
