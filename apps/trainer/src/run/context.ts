/**
 * What a run works with: the recipe, the environment and team built from it, the engine holding
 * the team's policies, the store the run's objects go to, and where progress is reported. The warm
 * start and the training loop take these together instead of as six loose arguments; here too
 * is what the reporter is told.
 */
import type { Team } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import type { ObjectStore } from "@troupe/storage";
import type { TrainerEnvironment } from "../envs.ts";
import type { EvalResult } from "../evaluate.ts";
import type { Recipe } from "../recipe.ts";

/** Where a run reports its progress (reports/reporter.ts prints it; tests stay quiet). */
export interface TrainReporter {
  step(info: StepReport): void;
  eval(step: number, result: EvalResult): void;
  note(message: string): void;
}

/** One committed training step, as the reporter shows it. */
export interface StepReport {
  readonly step: number;
  readonly totalSteps: number;
  readonly meanReward: number;
  readonly successRate: number;
  readonly tokensPerSecond: number;
  readonly seconds: number;
  readonly samples: number;
  readonly loss: number;
}

export interface RunContext {
  readonly recipe: Recipe;
  readonly trainerEnv: TrainerEnvironment;
  readonly team: Team;
  readonly engine: Engine;
  /** The store a run's objects (and its cached warm start) are in. */
  readonly store: ObjectStore;
  readonly reporter: TrainReporter;
  /** Asked after each committed warm-start step: true (SIGINT/SIGTERM) stops the warm start there. */
  readonly stopRequested?: () => boolean;
}
