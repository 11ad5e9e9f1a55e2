/**
 * Sum-to-target: a tiny two-agent environment with no dependencies, for tests, demos and docs.
 * Each agent says one digit per turn; digits add up to a running total. The team is rewarded for
 * hitting the target exactly and punished for overshooting, so agents must account for each
 * other's digits: the simplest task where collaboration matters.
 *
 * | event                            | team reward | local reward (the agent) |
 * |----------------------------------|-------------|--------------------------|
 * | total reaches the target exactly | +1, done    |                          |
 * | total exceeds the target         | -1, done    |                          |
 * | otherwise                        | 0           |                          |
 * | agent's text is not a digit      |             | -0.5 (adds nothing)      |
 */
import type { Environment, JointAction, StepResult } from "./environment.ts";
import { userObservation } from "./messages.ts";
import type { Task } from "./task.ts";

export interface SumToTargetPayload {
  readonly target: number;
}

export interface SumToTargetState {
  readonly target: number;
  readonly total: number;
  readonly steps: number;
  readonly history: readonly string[];
}

export function sumToTargetEnv(
  agents: readonly string[] = ["a", "b"],
): Environment<SumToTargetState, SumToTargetPayload> {
  return {
    name: "sum-to-target",
    agents,
    rewardBounds: { team: [-1, 1], local: [-0.5, 0] },
    reset(task: Task<SumToTargetPayload>): SumToTargetState {
      const target = task.payload.target;
      if (!Number.isInteger(target) || target < 1)
        throw new Error(`task ${task.id}: target must be a positive integer`);
      return { target, total: 0, steps: 0, history: [] };
    },
    observe(state, agent) {
      const said = state.history.length ? ` Said so far: ${state.history.join(" ")}.` : "";
      return userObservation(
        `You are ${agent}. Target ${state.target}. Total ${state.total}.${said} Say one digit.`,
      );
    },
    step(state, actions: JointAction): StepResult<SumToTargetState> {
      let total = state.total;
      const history = [...state.history];
      const localRewards: Record<string, number> = {};
      for (const agent of agents) {
        const text = actions[agent];
        if (text === undefined) continue;
        const digit = /^\s*(\d)/.exec(text);
        localRewards[agent] = digit ? 0 : -0.5;
        if (digit) total += Number(digit[1]);
        history.push(`${agent}:${digit ? digit[1] : "?"}`);
      }
      const hit = total === state.target;
      const over = total > state.target;
      return {
        state: { target: state.target, total, steps: state.steps + 1, history },
        teamReward: hit ? 1 : over ? -1 : 0,
        localRewards,
        done: hit || over,
        success: hit,
      };
    },
  };
}
