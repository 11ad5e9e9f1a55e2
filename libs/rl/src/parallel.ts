/**
 * Parallel rollouts: G independent episodes per task, every agent sampling one completion per
 * turn. With a one-role, one-turn team this is single-agent GRPO (Shao et al. 2024); with more
 * roles it is "MAS without tree": each agent is compared with itself across the G episodes.
 *
 * Per agent i, env step k of an episode gives a reward r_k^i = w_team · team_k + w_local · local_k^i
 * (team rewards count for every agent, acting or not). The return of agent i's completion at step s
 * is the discounted sum of its rewards from that step on:
 *
 *   R_s^i = Σ_{k ≥ s} γ^(turn_k − turn_s) · r_k^i
 *
 * Groups: key (environment, task, turn, agent); members are the G episodes' completions of that
 * agent at that turn (fewer if some episodes ended earlier). Advantages: see advantages.ts
 * (GRPO: mean baseline, std-normalised).
 */
import { type AgentId, type Observation, type StepResult, type Task, turnStages } from "@troupe/core";
import { type AdvantageConfig, groupAdvantages } from "./advantages.ts";
import { groupKey } from "./grouping.ts";
import {
  buildSample,
  type EpisodeSummary,
  generateForAgents,
  prepareContext,
  type RolloutContext,
  type RolloutNode,
  type RolloutResult,
  requestSeed,
  resetState,
  rewardParts,
  stepState,
} from "./rollout.ts";

export interface ParallelConfig {
  /** G: episodes per task. DeepSeekMath GRPO uses 64; small runs 4–16. */
  readonly groupSize: number;
  /** γ: discount across turns. 1 = undiscounted episode return. */
  readonly gamma: number;
  readonly teamWeight: number;
  readonly localWeight: number;
  readonly advantage: AdvantageConfig;
}

export const defaultParallelConfig: ParallelConfig = {
  groupSize: 8,
  gamma: 1,
  teamWeight: 1,
  localWeight: 0,
  advantage: { baseline: "mean", normalizeStd: true, eps: 1e-6 },
};

interface PendingSample {
  readonly agent: AgentId;
  readonly turn: number;
  readonly stepIndex: number;
  readonly seed: number;
  readonly observation: Observation;
  readonly completion: Awaited<ReturnType<typeof generateForAgents>>[number];
}

interface Episode<S> {
  readonly task: Task<unknown>;
  readonly index: number;
  state: S;
  done: boolean;
  success: boolean;
  turns: number;
  readonly steps: { turn: number; result: StepResult<S> }[];
  readonly pending: PendingSample[];
  readonly path: RolloutNode[];
}

export async function rolloutParallel<S, P>(
  ctx: RolloutContext<S, P>,
  tasks: readonly Task<P>[],
  config: ParallelConfig = defaultParallelConfig,
): Promise<RolloutResult> {
  prepareContext(ctx, tasks);
  if (!Number.isInteger(config.groupSize) || config.groupSize < 1) {
    throw new Error(`parallel: groupSize must be a positive integer, got ${config.groupSize}`);
  }
  const stages = turnStages(ctx.team);
  const episodes: Episode<S>[] = [];
  for (const task of tasks) {
    const initial = await resetState(ctx, task);
    for (let e = 0; e < config.groupSize; e++) {
      episodes.push({
        task,
        index: e,
        state: initial,
        done: false,
        success: false,
        turns: 0,
        steps: [],
        pending: [],
        path: [rootNode()],
      });
    }
  }
  let completions = 0;
  for (let turn = 0; turn < ctx.team.maxTurns; turn++) {
    for (const stage of stages) {
      const live = episodes.filter((ep) => !ep.done);
      if (live.length === 0) break;
      const requests = live.flatMap((ep) =>
        stage.map((agent) => ({
          agent,
          observation: ctx.env.observe(ep.state, agent),
          seed: requestSeed(ctx, "parallel", ep.task.id, ep.index, turn, agent),
        })),
      );
      const outputs = await generateForAgents(ctx, requests);
      completions += outputs.length;
      let k = 0;
      for (const ep of live) {
        const actions: Record<AgentId, string> = {};
        for (const agent of stage) {
          const request = requests[k]!;
          const completion = outputs[k]!;
          k++;
          actions[agent] = completion.text;
          ep.pending.push({
            agent,
            turn,
            stepIndex: ep.steps.length,
            seed: request.seed,
            observation: request.observation,
            completion,
          });
        }
        const result = await stepState(ctx, ep.state, actions);
        ep.steps.push({ turn, result });
        ep.state = result.state;
        ep.turns = turn + 1;
        ep.path.push(edgeNode([...ep.path.at(-1)!.path, 0], turn, actions, result));
        if (result.success) ep.success = true;
        if (result.done) ep.done = true;
      }
    }
  }

  // Returns, then group-relative advantages.
  const returns = new Map<PendingSample, number>();
  for (const ep of episodes) {
    for (const p of ep.pending) {
      let ret = 0;
      for (let k = p.stepIndex; k < ep.steps.length; k++) {
        const { turn, result } = ep.steps[k]!;
        ret += config.gamma ** (turn - p.turn) * rewardParts(result, p.agent, config).total;
      }
      returns.set(p, ret);
    }
  }
  const groups = new Map<string, { ep: Episode<S>; p: PendingSample }[]>();
  for (const ep of episodes) {
    for (const p of ep.pending) {
      const key = groupKey({ environment: ctx.env.name, taskId: ep.task.id, turn: p.turn, agent: p.agent });
      const members = groups.get(key) ?? [];
      members.push({ ep, p });
      groups.set(key, members);
    }
  }
  const samples = [...groups.entries()].flatMap(([key, members]) => {
    const advantages = groupAdvantages(
      members.map((m) => returns.get(m.p)!),
      config.advantage,
    );
    return members.map(({ ep, p }, i) =>
      buildSample(ctx, {
        strategy: "parallel",
        task: ep.task,
        episode: ep.index,
        turn: p.turn,
        agent: p.agent,
        branch: new Array(p.stepIndex).fill(0),
        candidate: 0,
        seed: p.seed,
        observation: p.observation,
        completion: p.completion,
        reward: rewardParts(ep.steps[p.stepIndex]!.result, p.agent, config),
        return: returns.get(p)!,
        advantage: advantages[i]!,
        groupKey: key,
        success: ep.success,
      }),
    );
  });

  const summaries: EpisodeSummary[] = episodes.map((ep) => ({
    taskId: ep.task.id,
    episode: ep.index,
    success: ep.success,
    teamReturn: ep.steps.reduce((s, x) => s + x.result.teamReward, 0),
    turns: ep.turns,
  }));
  const trees = episodes.map((ep) => chain(ep.path));
  return {
    samples,
    episodes: summaries,
    trees,
    stats: {
      completions,
      envSteps: episodes.reduce((n, ep) => n + ep.steps.length, 0),
      leaves: countLeaves(trees),
    },
  };
}

export function rootNode(): RolloutNode {
  return {
    path: [],
    turn: 0,
    actions: {},
    teamReward: 0,
    localRewards: {},
    done: false,
    returns: {},
    children: [],
  };
}

export function edgeNode(
  path: readonly number[],
  turn: number,
  actions: Readonly<Record<AgentId, string>>,
  result: StepResult<unknown>,
  returns: Readonly<Record<AgentId, number>> = {},
): RolloutNode {
  const node: RolloutNode = {
    path,
    turn,
    actions,
    teamReward: result.teamReward,
    localRewards: result.localRewards,
    done: result.done,
    returns,
    children: [],
  };
  return result.success === undefined ? node : { ...node, success: result.success };
}

/** Leaves of rollout trees. */
export function countLeaves(trees: readonly RolloutNode[]): number {
  let n = 0;
  const visit = (node: RolloutNode) => {
    if (node.children.length === 0) n++;
    else node.children.forEach(visit);
  };
  trees.forEach(visit);
  return n;
}

/** Links a list of nodes into a chain (each the only child of the previous) and returns the head. */
function chain(nodes: RolloutNode[]): RolloutNode {
  for (let i = 0; i + 1 < nodes.length; i++) nodes[i]!.children.push(nodes[i + 1]!);
  return nodes[0]!;
}
