import type { Task } from "@troupe/core";
import {
  type RolloutContext,
  type RolloutResult,
  rolloutAtgrpo,
  rolloutMagrpo,
  rolloutParallel,
} from "@troupe/rl";
import type { StrategyConfig } from "./recipe.ts";

/** Runs the recipe's rollout strategy. */
export function runStrategy(
  ctx: RolloutContext,
  tasks: readonly Task<unknown>[],
  strategy: StrategyConfig,
): Promise<RolloutResult> {
  switch (strategy.name) {
    case "parallel":
      return rolloutParallel(ctx, tasks, strategy);
    case "magrpo":
      return rolloutMagrpo(ctx, tasks, strategy);
    case "atgrpo":
      return rolloutAtgrpo(ctx, tasks, strategy);
  }
}
