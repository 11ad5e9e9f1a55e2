/**
 * Rollout trees: the `RolloutNode` shape every strategy reports its rollouts in (for reports,
 * demos and tests), and the helpers that build them. A tree strategy (MAGRPO, AT-GRPO) grows one
 * tree per task; GRPO rollouts report each episode as a chain (one child per node).
 */
import {
  type AgentId,
  type AgentRequest,
  type Completion,
  type EpisodeSummary,
  generateForAgents,
  prepareContext,
  type RolloutContext,
  type RolloutSample,
  requestSeed,
  resetState,
  type SeedPart,
  type StepResult,
  stepState,
  type Task,
} from "@troupe/core";
import { buildSample, type RolloutNode, type RolloutResult, type SampleDraft } from "./rollout.ts";

/** The root of a tree: the task's initial state, reached by no action. */
export function rootNode(): RolloutNode {
  return edgeNode([], 0, {}, { state: null, teamReward: 0, localRewards: {}, done: false });
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

/**
 * One rollout of a tree strategy (MAGRPO, AT-GRPO) over a batch of tasks: the context checked
 * once, every agent's candidates sampled on a node's state, the policy and environment calls
 * counted for the rollout's stats, and samples recorded under the strategy's name.
 */
export class TreeRollout<S> {
  private completions = 0;
  private envSteps = 0;

  constructor(
    private readonly ctx: RolloutContext<S, unknown>,
    tasks: readonly Task<unknown>[],
    /** The strategy's registered name: its samples' provenance and its request seed stream. */
    private readonly strategy: string,
  ) {
    prepareContext(ctx, tasks);
  }

  /** The task's initial state (every tree of a task grows from the same one). */
  reset(task: Task<unknown>): Promise<S> {
    return resetState(this.ctx, task);
  }

  /** `count` candidate requests of `agent` on one state: one observation, candidate k seeded at `[...place, agent, k]`. */
  candidates(state: S, agent: AgentId, count: number, ...place: SeedPart[]): AgentRequest[] {
    const observation = this.ctx.env.observe(state, agent);
    return Array.from({ length: count }, (_, k) => ({
      agent,
      observation,
      seed: requestSeed(this.ctx, this.strategy, ...place, agent, k),
    }));
  }

  /** Completions for the requests, in request order (see `generateForAgents`). */
  async generate(requests: readonly AgentRequest[]): Promise<Completion[]> {
    const outputs = await generateForAgents(this.ctx, requests);
    this.completions += outputs.length;
    return outputs;
  }

  /** One environment step from `state` (see `stepState`). */
  async step(state: S, actions: Readonly<Record<AgentId, string>>): Promise<StepResult<S>> {
    const result = await stepState(this.ctx, state, actions);
    this.envSteps++;
    return result;
  }

  /** A sample of this strategy (see `buildSample`). */
  sample(draft: Omit<SampleDraft, "strategy">): RolloutSample {
    return buildSample(this.ctx, { strategy: this.strategy, ...draft });
  }

  /** The rollout's result, with the calls counted so far. */
  result(samples: RolloutSample[], episodes: EpisodeSummary[], trees: RolloutNode[]): RolloutResult {
    const stats = { completions: this.completions, envSteps: this.envSteps, leaves: countLeaves(trees) };
    return { samples, episodes, trees, stats };
  }
}
