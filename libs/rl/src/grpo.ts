/**
 * GRPO rollouts: G independent episodes per task, every agent sampling one completion per
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
 * agent at that turn (fewer if some episodes ended earlier). Advantages: the controller's
 * estimator (estimators.ts; GRPO: mean baseline, std-normalised).
 */
import {
  type AgentAction,
  type Episode,
  type RolloutContext,
  runEpisodes,
  summarizeEpisode,
  type Task,
} from "@troupe/core";
import { z } from "zod";
import { groupKey } from "./grouping.ts";
import { buildSample, checkCount, type RolloutResult, rewardParts } from "./rollout.ts";
import { chainTree, countLeaves } from "./tree.ts";

export const GrpoConfigSchema = z.strictObject({
  /** G: episodes per task. DeepSeekMath GRPO uses 64; small runs 4–16. */
  groupSize: z.number().int().min(1).default(8),
  /** γ: discount across turns. 1 = undiscounted episode return. */
  gamma: z.number().min(0).max(1).default(1),
  /** w_team: weight of the team reward in r. */
  teamWeight: z.number().default(1),
  /** w_local: weight of the agent's own reward in r. */
  localWeight: z.number().default(0),
});
export type GrpoConfig = z.output<typeof GrpoConfigSchema>;
export const defaultGrpoConfig: GrpoConfig = GrpoConfigSchema.parse({});

export async function rolloutGrpo<S, P>(
  ctx: RolloutContext<S, P>,
  tasks: readonly Task<P>[],
  config: GrpoConfig = defaultGrpoConfig,
): Promise<RolloutResult> {
  checkCount("grpo", "groupSize", config.groupSize, 1);
  const episodes = await runEpisodes(ctx, tasks, config.groupSize);

  // Each completion with its return R_s^i, grouped by (task, turn, agent) in episode order.
  const groups = new Map<string, { ep: Episode<S>; stepIndex: number; action: AgentAction; ret: number }[]>();
  for (const ep of episodes) {
    ep.steps.forEach((step, stepIndex) => {
      for (const action of step.acted) {
        let ret = 0;
        for (let k = stepIndex; k < ep.steps.length; k++) {
          const later = ep.steps[k]!;
          ret +=
            config.gamma ** (later.turn - step.turn) * rewardParts(later.result, action.agent, config).total;
        }
        const key = groupKey({
          environment: ctx.env.name,
          taskId: ep.task.id,
          turn: step.turn,
          agent: action.agent,
        });
        const members = groups.get(key) ?? [];
        members.push({ ep, stepIndex, action, ret });
        groups.set(key, members);
      }
    });
  }
  const samples = [...groups.entries()].flatMap(([key, members]) =>
    members.map(({ ep, stepIndex, action, ret }) =>
      buildSample(ctx, {
        strategy: "grpo",
        task: ep.task,
        episode: ep.index,
        turn: ep.steps[stepIndex]!.turn,
        agent: action.agent,
        branch: new Array(stepIndex).fill(0),
        candidate: 0,
        seed: action.seed,
        observation: action.observation,
        completion: action.completion,
        reward: rewardParts(ep.steps[stepIndex]!.result, action.agent, config),
        return: ret,
        groupKey: key,
        success: ep.success,
      }),
    ),
  );
  const trees = episodes.map((ep) => chainTree(ep.steps));
  return {
    samples,
    episodes: episodes.map(summarizeEpisode),
    trees,
    stats: {
      completions: episodes.reduce((n, ep) => n + ep.steps.reduce((m, s) => m + s.acted.length, 0), 0),
      envSteps: episodes.reduce((n, ep) => n + ep.steps.length, 0),
      leaves: countLeaves(trees),
    },
  };
}
