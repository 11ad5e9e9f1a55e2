/**
 * Machinery shared by the rollout strategies: rollout trees and results, and building `RolloutSample`
 * records with full provenance. The context, batched generation and the episode loop they run on
 * are @troupe/core's (episode.ts).
 */
import {
  type AgentId,
  type Completion,
  type EpisodeSummary,
  type Observation,
  type Provenance,
  type RewardParts,
  type RolloutContext,
  type RolloutSample,
  roleOf,
  SAMPLE_SCHEMA_VERSION,
  type StepResult,
  samplingOf,
  type Task,
} from "@troupe/core";

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
  /** Without advantages: the controller's advantage stage (estimators.ts) estimates them for the batch. */
  readonly samples: RolloutSample[];
  readonly episodes: EpisodeSummary[];
  /** One tree per task (and episode, for GRPO rollouts). */
  readonly trees: RolloutNode[];
  readonly stats: { readonly completions: number; readonly envSteps: number; readonly leaves: number };
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

export function buildSample(ctx: RolloutContext, draft: SampleDraft): RolloutSample {
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
    sampling: samplingOf(ctx, draft.agent),
    seed: draft.seed,
  };
  const sample: RolloutSample = {
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

/**
 * A strategy's count setting (G, K) is a whole number ≥ `min`. Checked at the rollout as well as in
 * the schema because a config object can be built without it.
 */
export function checkCount(strategy: string, name: string, value: number, min: number, why?: string): void {
  if (Number.isInteger(value) && value >= min) return;
  const bound = min === 1 ? "a positive integer" : `an integer ≥ ${min}`;
  throw new Error(
    `${strategy}: ${name} must be ${bound}${why === undefined ? "" : ` (${why})`}, got ${value}`,
  );
}
