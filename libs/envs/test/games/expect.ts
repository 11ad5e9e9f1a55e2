/** Checks the game tests share. */
import type { Environment, StepResult, Task } from "@troupe/core";
import { expect } from "vitest";
import { stepSync } from "./step-sync.ts";

type RewardBounds = NonNullable<Environment<unknown>["rewardBounds"]>;

/** The step's team reward and every local reward lie within the environment's declared bounds. */
export function expectWithinRewardBounds(result: StepResult<unknown>, { team, local }: RewardBounds): void {
  expect(result.teamReward).toBeGreaterThanOrEqual(team[0]);
  expect(result.teamReward).toBeLessThanOrEqual(team[1]);
  for (const v of Object.values(result.localRewards)) {
    expect(v).toBeGreaterThanOrEqual(local[0]);
    expect(v).toBeLessThanOrEqual(local[1]);
  }
}

/** The message of what `f` throws, or `otherwise` when it returns. */
export function thrownMessage(f: () => unknown, otherwise: string): string {
  try {
    f();
  } catch (error) {
    return (error as Error).message;
  }
  return otherwise;
}

/** The demo's plan for each generated level, as the planner's one action, solves it in the level's optimal moves. */
export function expectDemosOptimal<P extends { optimal: number }, S extends { movesTaken: number }>(
  env: Pick<Environment<S, P>, "name" | "step"> & { reset(task: Task<P>, seed: number): S },
  tasks: readonly Task<P>[],
  demo: (task: Task<P>, state: S, agent: string) => string,
): void {
  for (const task of tasks) {
    const s0 = env.reset(task, 0);
    const r = stepSync(env, s0, { planner: demo(task, s0, "planner") });
    expect(r.success).toBe(true);
    expect(r.state.movesTaken).toBe(task.payload.optimal);
  }
}
