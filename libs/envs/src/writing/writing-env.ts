/**
 * Two-writer environments (CoMLRL writing tasks), single turn, both agents in parallel:
 * - `tldr`: `concise` writes a one-to-two sentence TL;DR of a post, `detailed` a fuller summary;
 * - `arxiv`: `background` writes the background/motivation part of a paper introduction from its
 *   abstract, `methods` the part presenting the approach and contributions.
 * Team reward = the tiered proxy reward (rewards.ts) in [0, 3]; local reward = 0.5 when the
 * agent's own text is within the token bounds, else 0. Always done after one step; success =
 * all four tiers were reached (no tier stopped the count).
 */
import type { AgentId, Environment } from "@troupe/core";
import { textEnvironment } from "../text-env.ts";
import type { WritingKind, WritingProblem } from "./dataset.ts";
import {
  WRITING_REWARD_TIERS,
  type WritingRewardBreakdown,
  type WritingRewardConfig,
  writingReward,
} from "./rewards.ts";
import { countTokens } from "./text-stats.ts";

export const WRITING_AGENTS: Record<WritingKind, readonly [AgentId, AgentId]> = {
  tldr: ["concise", "detailed"],
  arxiv: ["background", "methods"],
};

export interface WritingState {
  readonly problem: WritingProblem;
  readonly texts: Readonly<Record<AgentId, string>> | null;
  readonly reward: WritingRewardBreakdown | null;
  readonly done: boolean;
}

function prompt(agent: AgentId, p: WritingProblem, config: WritingRewardConfig): string {
  const { min, max } = config.tokens;
  switch (agent) {
    case "concise":
      return `Write a concise TL;DR summary (one or two sentences, ${min}–${max} words) of this post. A teammate writes a longer, detailed summary.\n\nTitle: ${p.title}\nPost: ${p.text}`;
    case "detailed":
      return `Write a detailed summary (one paragraph, ${min}–${max} words) of this post. A teammate writes a one-sentence TL;DR; add the details it leaves out.\n\nTitle: ${p.title}\nPost: ${p.text}`;
    case "background":
      return `Write the first part of the introduction of this paper: background and motivation (${min}–${max} words). A teammate writes the part on methods and contributions.\n\nTitle: ${p.title}\nAbstract: ${p.text}`;
    default:
      return `Write the second part of the introduction of this paper: the approach and contributions (${min}–${max} words). A teammate writes the background and motivation.\n\nTitle: ${p.title}\nAbstract: ${p.text}`;
  }
}

export function writingEnv(
  kind: WritingKind,
  config: WritingRewardConfig = WRITING_REWARD_TIERS[kind],
): Environment<WritingState, WritingProblem> {
  const agents = WRITING_AGENTS[kind];
  const [first, second] = agents;
  const maxTotal =
    config.structureReward + config.coordinationReward + config.vocabularyReward + config.styleReward;
  return textEnvironment<WritingState, WritingProblem>({
    name: `writing-${kind}`,
    agents,
    rewardBounds: { team: [0, maxTotal], local: [0, config.structureReward] },
    reset(task) {
      if (task.payload.kind !== kind)
        throw new Error(`writing-${kind}: task ${task.id} is a ${task.payload.kind} task`);
      return { problem: task.payload, texts: null, reward: null, done: false };
    },
    prompt: (state, agent) => prompt(agent, state.problem, config),
    step(state, actions) {
      const a = (actions[first] ?? "").trim();
      const b = (actions[second] ?? "").trim();
      const reward = writingReward(a, b, config);
      const inBounds = (t: string) => {
        const n = countTokens(t);
        return n >= config.tokens.min && n <= config.tokens.max ? config.structureReward : 0;
      };
      return {
        state: { ...state, texts: { [first]: a, [second]: b }, reward, done: true },
        teamReward: reward.total,
        localRewards: { [first]: inBounds(a), [second]: inBounds(b) },
        done: true,
        success: reward.stoppedAt === undefined,
        info: { reward },
      };
    },
  });
}
