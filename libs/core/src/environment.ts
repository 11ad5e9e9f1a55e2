/**
 * An environment is a decentralised POMDP over text: every agent observes the shared state
 * through its own `observe`, acts with text, and `step` returns the next state with a team
 * reward and per-agent local rewards.
 *
 * Contract: **`step` never mutates its input state.** It returns a new state (sharing unchanged
 * parts is fine, and encouraged). Tree rollouts step the same state with many different actions;
 * the rollout code deep-freezes states to turn an accidental mutation into an error instead of a
 * silent leak between branches.
 */
import type { Observation } from "./messages.ts";
import type { Task } from "./task.ts";

export type AgentId = string;

/** What the acting agents said this step, by agent. Applied in the team's role order. */
export type JointAction = Readonly<Record<AgentId, string>>;

export interface StepResult<State> {
  readonly state: State;
  /** Reward shared by the whole team for this step. */
  readonly teamReward: number;
  /** Each agent's own reward for this step (0 for agents without one). */
  readonly localRewards: Readonly<Record<AgentId, number>>;
  /** The episode is over: no agent acts again. */
  readonly done: boolean;
  /** Whether the team solved the task, when the environment can tell. */
  readonly success?: boolean;
  /** Free-form diagnostics (parse errors, test output), kept with the samples. */
  readonly info?: Readonly<Record<string, unknown>>;
}

export type MaybePromise<T> = T | Promise<T>;

export interface Environment<State = unknown, Payload = unknown> {
  /** Stable name, used in group keys, shards and reports. */
  readonly name: string;
  /** The agents this environment expects, in their default turn order. */
  readonly agents: readonly AgentId[];
  /** Inclusive bounds of one step's team and local rewards, for documentation and smoke tests. */
  readonly rewardBounds?: {
    readonly team: readonly [number, number];
    readonly local: readonly [number, number];
  };
  reset(task: Task<Payload>, seed: number): MaybePromise<State>;
  observe(state: State, agent: AgentId): Observation;
  step(state: State, actions: JointAction): MaybePromise<StepResult<State>>;
  /**
   * How hard a task is, as a number that orders tasks (the games: the length of an optimal plan),
   * for success-by-difficulty breakdowns; absent when the environment has no such measure.
   */
  difficulty?(task: Task<Payload>): number;
}
