/**
 * Rollout trees: the `RolloutNode` shape every strategy reports its rollouts in (for reports,
 * demos and tests), and the helpers that build them. A tree strategy (MAGRPO, AT-GRPO) grows one
 * tree per task; parallel rollouts report each episode as a chain (one child per node).
 */
import type { AgentId, StepResult } from "@troupe/core";
import type { RolloutNode } from "./rollout.ts";

/** The root of a tree: the task's initial state, reached by no action. */
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

/** The node an environment step leads to: `actions` taken in `turn`, with the step's rewards. */
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

/** One episode's steps as a chain from the root (each node the only child of the previous). */
export function chainTree(
  steps: readonly {
    readonly turn: number;
    readonly actions: Readonly<Record<AgentId, string>>;
    readonly result: StepResult<unknown>;
  }[],
): RolloutNode {
  const root = rootNode();
  let cursor = root;
  for (const step of steps) {
    const next = edgeNode([...cursor.path, 0], step.turn, step.actions, step.result);
    cursor.children.push(next);
    cursor = next;
  }
  return root;
}
