/**
 * The frame of the text-task environments (coding, math, writing): every agent reads one user
 * message, a finished episode takes no more steps, and the turn budget is checked once.
 */
import {
  type AgentId,
  type Environment,
  type JointAction,
  type MaybePromise,
  type StepResult,
  type Task,
  userObservation,
} from "@troupe/core";

/** What the state of a multi-turn text task holds besides its environment's own fields. */
export interface TurnState<Problem> {
  readonly problem: Problem;
  /** Turns taken so far (coder + tester: the coder's attempts). */
  readonly turn: number;
  readonly maxTurns: number;
  readonly done: boolean;
}

export interface TextEnvironmentSpec<State extends { readonly done: boolean }, Payload> {
  /** The environment's name; errors start with it. */
  readonly name: string;
  readonly agents: readonly AgentId[];
  readonly rewardBounds: NonNullable<Environment["rewardBounds"]>;
  reset(task: Task<Payload>): State;
  /** The text `agent` reads in `state` (its observation's one user message). */
  prompt(state: State, agent: AgentId): string;
  /** One step from a state whose episode is not over. */
  step(state: State, actions: JointAction): MaybePromise<StepResult<State>>;
}

/** An environment whose observations are the spec's prompts and whose `step` refuses finished episodes. */
export function textEnvironment<State extends { readonly done: boolean }, Payload>(
  spec: TextEnvironmentSpec<State, Payload>,
): Environment<State, Payload> {
  return {
    name: spec.name,
    agents: spec.agents,
    rewardBounds: spec.rewardBounds,
    reset: (task) => spec.reset(task),
    observe: (state, agent) => userObservation(spec.prompt(state, agent)),
    async step(state, actions) {
      if (state.done) throw new Error(`${spec.name}: step called on a finished episode`);
      return spec.step(state, actions);
    },
  };
}

/** A `maxTurns` option: returned when it is a positive integer, else an error naming `who`. */
export function checkMaxTurns(who: string, maxTurns: number): number {
  if (!Number.isInteger(maxTurns) || maxTurns < 1)
    throw new Error(`${who}: maxTurns must be >= 1, got ${maxTurns}`);
  return maxTurns;
}
