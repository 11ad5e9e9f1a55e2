/**
 * The episode runner: a team plays tasks to the end, every agent generating with its own policy
 * from its own observation, stage by stage as `turnStages(team)` orders them (sequential: one agent
 * after the other, each seeing the previous one's step; parallel: all on the same state).
 *
 * Every episode loop runs here: parallel rollouts (G episodes per task), the trainer's held-out
 * evaluation (one per test task) and serving (`solve` in @troupe/teams, one episode with a turn
 * event per agent as it happens and a deadline). One loop means one seed path, so a served
 * episode with the run's seed and the evaluation's sampling is the evaluation's episode.
 *
 * Batching: at each stage the live episodes of every task ask together — one `generate` per
 * policy — and are then stepped one by one in task order. Request seeds come from (run seed,
 * step, task, episode, turn, agent), never from batch positions.
 */
import {
  type AgentId,
  type Completion,
  type Observation,
  type StepResult,
  type Task,
  turnStages,
} from "@troupe/core";
import {
  type AgentRequest,
  type EpisodeSummary,
  generateForAgents,
  prepareContext,
  type RolloutContext,
  requestSeed,
  resetState,
  stepState,
} from "./rollout.ts";

/**
 * The seed stream of episode requests. It carries the name of the strategy that first ran this
 * loop ("parallel"), so rollouts, evaluations and served episodes keep their seeds.
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
      let k = 0;
      for (const ep of live) {
        const acted: AgentAction[] = [];
        const actions: Record<AgentId, string> = {};
        for (const agent of stage) {
          const request = requests[k]!;
          const completion = outputs[k++]!;
          acted.push({ agent, observation: request.observation, seed: request.seed, completion });
          actions[agent] = completion.text;
        }
        const result = await guard(stepState(ctx, ep.state, actions));
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
