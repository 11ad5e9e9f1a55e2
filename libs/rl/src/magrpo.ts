/**
 * MAGRPO — Multi-Agent Group Relative Policy Optimization
 * (Liu et al., "LLM Collaboration With Multi-Agent Reinforcement Learning", 2025; CoMLRL).
 *
 * Tree rollout. At every node (a state at turn t), each of the N agents samples G completions
 * from its own observation of that state. Joint actions:
 *   aligned: j = 0..G−1, joint action j = (a_1^j, …, a_N^j)             → G children per node
 *   cross:   every (g_1, …, g_N) ∈ [G]^N, lexicographic order           → G^N children per node
 * Every joint action is stepped on the node's (immutable) state and becomes a child node, so a
 * tree of T turns has G^T (aligned) or G^{N·T} (cross) leaves.
 *
 * Rewards and returns, per agent i (team rewards are shared; local ones optional):
 *   r_j^i = w_team · team_j + w_local · local_j^i
 *   R_j^i = r_j^i + γ · mean_k R_{child(j),k}^i        (R_j^i = r_j^i at a leaf)
 * Early termination: when the mean reward of a node's joint actions, mean_j mean_i r_j^i, exceeds
 * `earlyTerminationThreshold`, its children are not expanded (they become leaves).
 *
 * Credit for agent i's completion g at a node:
 *   aligned: R^i(g) = R_g^i
 *   cross:   R^i(g) = Σ_{j : j_i = g} R_j^i   (sum, as CoMLRL; or the mean, `crossCredit: "mean"`)
 * Group: the G completions of agent i at one node (siblings); key (environment, task, turn, agent,
 * node); return R^i(g). The controller's estimator gives A^i(g) = R^i(g) − baseline (mean by
 * default; raw, max, rloo; optional std; estimators.ts).
 *
 * MAGRPO samples joint actions: all agents of a turn act on the same state. A team whose turn
 * order is sequential (later roles see earlier roles' actions within the turn) cannot be rolled
 * out this way: use AT-GRPO or GRPO rollouts for it.
 */
import {
  type AgentId,
  type Completion,
  type EpisodeSummary,
  mean,
  type Observation,
  type RolloutContext,
  type RolloutSample,
  type StepResult,
  type Task,
  turnStages,
} from "@troupe/core";
import { z } from "zod";
import { groupKey } from "./grouping.ts";
import { checkCount, type RolloutNode, type RolloutResult, rewardParts } from "./rollout.ts";
import { edgeNode, rootNode, TreeRollout } from "./tree.ts";

export const MagrpoConfigSchema = z.strictObject({
  /** G: completions per agent per node. CoMLRL default 4 (must be ≥ 2 for a baseline). */
  groupSize: z.number().int().min(2).default(4),
  /** How per-agent completions combine into joint actions. CoMLRL default "cross". */
  jointMode: z.enum(["aligned", "cross"]).default("cross"),
  /** γ in R = r + γ·mean(children). CoMLRL default 0.9. */
  gamma: z.number().min(0).max(1).default(0.9),
  /** Stop expanding a node whose joint actions' mean reward exceeds this. Absent: never. */
  earlyTerminationThreshold: z.number().optional(),
  /** Cross mode: a completion's credit is the sum (CoMLRL) or the mean of its joint returns. */
  crossCredit: z.enum(["sum", "mean"]).default("sum"),
  /** w_team: weight of the team reward in r. */
  teamWeight: z.number().default(1),
  /** w_local: weight of the agent's own reward in r. */
  localWeight: z.number().default(0),
});
export type MagrpoConfig = z.output<typeof MagrpoConfigSchema>;
export type JointMode = MagrpoConfig["jointMode"];
export const defaultMagrpoConfig: MagrpoConfig = MagrpoConfigSchema.parse({});

/** Joint actions as per-agent candidate indices: aligned → [[g, …, g]], cross → [G]^N lexicographic. */
export function jointActions(agents: number, groupSize: number, mode: JointMode): number[][] {
  if (mode === "aligned") return Array.from({ length: groupSize }, (_, g) => new Array(agents).fill(g));
  let combos: number[][] = [[]];
  for (let a = 0; a < agents; a++) {
    combos = combos.flatMap((prefix) => Array.from({ length: groupSize }, (_, g) => [...prefix, g]));
  }
  return combos;
}

interface Candidate {
  readonly seed: number;
  readonly observation: Observation;
  readonly completion: Completion;
}

interface TreeNode<S> {
  readonly task: Task<unknown>;
  readonly path: number[];
  readonly turn: number;
  readonly state: S;
  /** The step that led here (undefined at the root). */
  readonly incoming?: StepResult<S>;
  readonly incomingActions: Record<AgentId, string>;
  /** Leaf: the episode ended, the turn budget is spent, or early termination cut it. */
  expandable: boolean;
  candidates: Candidate[][]; // [agent][g]
  joints: number[][];
  children: TreeNode<S>[];
  /** R_j^i for each joint action j and agent i. */
  jointReturns: number[][];
}

export async function rolloutMagrpo<S, P>(
  ctx: RolloutContext<S, P>,
  tasks: readonly Task<P>[],
  config: MagrpoConfig = defaultMagrpoConfig,
): Promise<RolloutResult> {
  checkCount("magrpo", "groupSize", config.groupSize, 2, "a group baseline needs siblings");
  const tree = new TreeRollout(ctx, tasks, "magrpo");
  const stages = turnStages(ctx.team);
  if (stages.length > 1) {
    throw new Error(
      `magrpo: team "${ctx.team.name}" takes turns sequentially; MAGRPO samples joint actions on one state, so set turnOrder "parallel" or use atgrpo or grpo`,
    );
  }
  const agents = stages[0]!;
  const joints = jointActions(agents.length, config.groupSize, config.jointMode);

  const roots: TreeNode<S>[] = [];
  for (const task of tasks) {
    roots.push({
      task,
      path: [],
      turn: 0,
      state: await tree.reset(task),
      incomingActions: {},
      expandable: true,
      candidates: [],
      joints: [],
      children: [],
      jointReturns: [],
    });
  }

  // Breadth-first: one batched generation per depth for every open node of every task.
  let frontier = roots;
  for (let turn = 0; turn < ctx.team.maxTurns && frontier.length > 0; turn++) {
    const open = frontier.filter((n) => n.expandable);
    const requests = open.flatMap((node) =>
      agents.flatMap((agent) =>
        tree.candidates(node.state, agent, config.groupSize, node.task.id, node.path.join(".")),
      ),
    );
    const outputs = await tree.generate(requests);
    const next: TreeNode<S>[] = [];
    let k = 0;
    for (const node of open) {
      node.candidates = agents.map(() =>
        Array.from({ length: config.groupSize }, () => {
          const request = requests[k]!;
          return { seed: request.seed, observation: request.observation, completion: outputs[k++]! };
        }),
      );
      node.joints = joints;
    }
    // Every joint action of every open node steps at once (the sandbox runs their programs in
    // parallel); a step is a function of (state, actions), so the results are those of one at a time.
    const stepped = await Promise.all(
      open.flatMap((node) =>
        joints.map((joint) => {
          const actions: Record<AgentId, string> = {};
          agents.forEach((agent, i) => {
            actions[agent] = node.candidates[i]![joint[i]!]!.completion.text;
          });
          return tree.step(node.state, actions);
        }),
      ),
    );
    for (const [n, node] of open.entries()) {
      const results: StepResult<S>[] = stepped.slice(n * joints.length, (n + 1) * joints.length);
      const meanReward = mean(results.map((r) => mean(agents.map((a) => rewardParts(r, a, config).total))));
      const cut =
        config.earlyTerminationThreshold !== undefined && meanReward > config.earlyTerminationThreshold;
      node.children = results.map((result, j) => {
        const child: TreeNode<S> = {
          task: node.task,
          path: [...node.path, j],
          turn: turn + 1,
          state: result.state,
          incoming: result,
          incomingActions: Object.fromEntries(
            agents.map((a, i) => [a, node.candidates[i]![joints[j]![i]!]!.completion.text]),
          ),
          expandable: !result.done && !cut && turn + 1 < ctx.team.maxTurns,
          candidates: [],
          joints: [],
          children: [],
          jointReturns: [],
        };
        next.push(child);
        return child;
      });
    }
    frontier = next;
  }

  // Returns bottom-up: R_j^i = r_j^i + γ · mean_k R_{child(j),k}^i.
  const computeReturns = (node: TreeNode<S>): void => {
    node.jointReturns = node.children.map((child) => {
      if (child.children.length > 0) computeReturns(child);
      return agents.map((agent, i) => {
        const r = rewardParts(child.incoming!, agent, config).total;
        const future = child.children.length > 0 ? mean(child.jointReturns.map((ret) => ret[i]!)) : 0;
        return r + config.gamma * future;
      });
    });
  };
  roots.forEach(computeReturns);

  return tree.result(
    roots.flatMap((root) => collectSamples(ctx, tree, root, agents, config)),
    roots.flatMap((root) => leafEpisodes(root)),
    roots.map((root) => toRolloutNode(root, agents)),
  );
}

function collectSamples<S>(
  ctx: RolloutContext<S, unknown>,
  tree: TreeRollout<S>,
  node: TreeNode<S>,
  agents: readonly AgentId[],
  config: MagrpoConfig,
): RolloutSample[] {
  if (node.children.length === 0) return [];
  const out: RolloutSample[] = [];
  agents.forEach((agent, i) => {
    const G = node.candidates[i]!.length;
    // Credit R^i(g) and the immediate reward parts averaged over the joint actions g took part in.
    const credit = new Array<number>(G).fill(0);
    const counts = new Array<number>(G).fill(0);
    const rewardSums = Array.from({ length: G }, () => ({ team: 0, local: 0, total: 0 }));
    node.joints.forEach((joint, j) => {
      const g = joint[i]!;
      credit[g]! += node.jointReturns[j]![i]!;
      counts[g]! += 1;
      const parts = rewardParts(node.children[j]!.incoming!, agent, config);
      rewardSums[g]!.team += parts.team;
      rewardSums[g]!.local += parts.local;
      rewardSums[g]!.total += parts.total;
    });
    const returns = credit.map((c, g) =>
      config.jointMode === "cross" && config.crossCredit === "mean" ? c / counts[g]! : c,
    );
    const key = groupKey({
      environment: ctx.env.name,
      taskId: node.task.id,
      turn: node.turn,
      agent,
      node: node.path,
    });
    node.candidates[i]!.forEach((candidate, g) => {
      const n = counts[g]!;
      out.push(
        tree.sample({
          task: node.task,
          episode: 0,
          turn: node.turn,
          agent,
          branch: node.path,
          candidate: g,
          seed: candidate.seed,
          observation: candidate.observation,
          completion: candidate.completion,
          reward: {
            team: rewardSums[g]!.team / n,
            local: rewardSums[g]!.local / n,
            total: rewardSums[g]!.total / n,
          },
          return: returns[g]!,
          groupKey: key,
        }),
      );
    });
  });
  for (const child of node.children) out.push(...collectSamples(ctx, tree, child, agents, config));
  return out;
}

function toRolloutNode<S>(
  node: TreeNode<S>,
  agents: readonly AgentId[],
  returns: number[] = [],
): RolloutNode {
  const base = node.incoming
    ? edgeNode(
        node.path,
        node.turn - 1, // the turn in which the incoming joint action was taken
        node.incomingActions,
        node.incoming,
        Object.fromEntries(agents.map((a, i) => [a, returns[i] ?? 0])),
      )
    : rootNode();
  node.children.forEach((child, j) => {
    base.children.push(toRolloutNode(child, agents, node.jointReturns[j]));
  });
  return base;
}

function leafEpisodes<S>(node: TreeNode<S>, teamReturn = 0): EpisodeSummary[] {
  const here = teamReturn + (node.incoming?.teamReward ?? 0);
  if (node.children.length === 0) {
    return [
      {
        taskId: node.task.id,
        episode: 0,
        success: node.incoming?.success ?? false,
        teamReturn: here,
        turns: node.turn,
      },
    ];
  }
  return node.children.flatMap((c) => leafEpisodes(c, here));
}
