/** Checks the game tests share. */
import type { Environment, StepResult } from "@troupe/core";
import { expect } from "vitest";

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
