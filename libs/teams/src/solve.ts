/**
 * `solve`: one episode of a loaded team on one task, with decentralised execution — every agent
 * generates with its own policy from its own observation (`env.observe(state, agent)`), stage by
 * stage as `turnStages(team)` orders them (sequential: one agent after the other; parallel: all on
 * the same state).
 *
 * The episode is played by @troupe/core's episode runner, the loop of the trainer's parallel
 * rollouts and of its evaluation (one episode per task), so the prompts are the training prompts
 * (the environment renders them; the engine applies the policy's chat template), and with the
 * run's seed and the evaluation sampling a solve reproduces the evaluation's episode on that task.
 * On top of it: a TurnEvent per agent turn as it happens, a turn limit, per-request sampling
 * (sampling.ts), a prompt-length check before every generation, and an AbortSignal deadline.
 */
import {
  type AgentId,
  type ChatMessage,
  type EpisodeHooks,
  type Observation,
  type Policy,
  type RolloutContext,
  roleOf,
  runEpisodes,
  type Task,
  type Team,
} from "@troupe/core";
import { type ExecutedAction, renderAnswer, type SolveAnswer } from "./answer.ts";
import {
  parseSolveOptions,
  resolveTask,
  type SolveInput,
  SolveInputError,
  type SolveOptions,
} from "./input.ts";
import type { LoadedTeam } from "./load-team.ts";
import { requestSampling } from "./sampling.ts";

export interface TurnEvent {
  /** Turn index (0-based); a turn is every role acting once. */
  turn: number;
  agent: string;
  role: string;
  policy: string;
  /** The observation as text (the messages' contents); `messages` has them with their roles. */
  prompt: string;
  messages: ChatMessage[];
  completion: string;
  promptTokens: number;
  completionTokens: number;
  /** Generation time of the stage this turn belongs to. */
  ms: number;
  /** Team reward of the environment step this action was part of. */
  teamReward: number;
  done: boolean;
}

export interface RoleUsage {
  calls: number;
  promptTokens: number;
  completionTokens: number;
}

export interface SolveResult {
  task: { id: string; payload: unknown };
  answer: SolveAnswer;
  /** null when the environment cannot judge success. */
  solved: boolean | null;
  teamReturn: number;
  turns: TurnEvent[];
  usage: Record<string, RoleUsage>;
  latencyMs: number;
  /** The seed the episode ran with (given, or drawn): solving again with it gives the same result. */
  seed: number;
}

/** The request's deadline fired (or it was cancelled) before the episode finished. */
export class SolveAbortedError extends Error {
  constructor(readonly reason: unknown) {
    super(`solve aborted: ${reason instanceof Error ? reason.message : String(reason ?? "aborted")}`);
    this.name = "SolveAbortedError";
  }
}

/**
 * Settles like `work`, or rejects as soon as `signal` aborts, with `reasonOf(signal.reason)` (the
 * signal's reason itself by default). The work is not stopped, only no longer waited for; a
 * rejection of it after that is consumed (never an unhandled rejection). solve() waits on each
 * generation this way; a server waits on its own steps so (a body read, a team load).
 */
export function abortable<T>(
  work: Promise<T>,
  signal: AbortSignal,
  reasonOf: (reason: unknown) => unknown = (reason) => reason,
): Promise<T> {
  work.catch(() => {});
  if (signal.aborted) return Promise.reject(reasonOf(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(reasonOf(signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function promptText(messages: readonly ChatMessage[]): string {
  return messages.length === 1
    ? messages[0]!.content
    : messages.map((m) => `${m.role}: ${m.content}`).join("\n\n");
}

/** The team's policies, each generation given the request's signal (the backend stops at its next token). */
function signalledPolicies(loaded: LoadedTeam, signal: AbortSignal | undefined): Record<string, Policy> {
  const policies: Record<string, Policy> = {};
  for (const [policyId, policy] of Object.entries(loaded.policies)) {
    policies[policyId] = {
      id: policy.id,
      version: policy.version,
      generate: (requests, sampling) => policy.generate(requests, sampling, { signal }),
    };
  }
  return policies;
}

/**
 * Every prompt must fit its model's context: a prompt of `tokens ≥ max_position_embeddings` is the
 * caller's task being too large, named at `taskPath` (`task` or `generate`).
 */
function promptCheck(loaded: LoadedTeam, team: Team, taskPath: string) {
  return (requests: readonly { agent: AgentId; observation: Observation }[]) => {
    for (const { agent, observation } of requests) {
      const policyId = roleOf(team, agent).policy;
      const context = loaded.contexts?.[policyId];
      if (context === undefined) continue;
      const tokens = context.promptTokens(observation.messages);
      if (tokens >= context.maxPositions) {
        throw new SolveInputError(
          `the prompt of agent ${agent} is ${tokens} tokens, and its model reads at most ${context.maxPositions} ` +
            `(max_position_embeddings of policy ${policyId}): give a smaller task`,
          [taskPath],
        );
      }
    }
  };
}

/** The episode's turns as they happen: the events, the executed actions (for the answer) and each role's usage. */
function turnLog(team: Team, onTurn: ((event: TurnEvent) => void) | undefined) {
  const turns: TurnEvent[] = [];
  const executed: ExecutedAction[] = [];
  const usage: Record<string, RoleUsage> = {};
  const onStep: NonNullable<EpisodeHooks<unknown>["onStep"]> = (_, { turn, acted, result, generationMs }) => {
    for (const { agent, observation, completion } of acted) {
      const role = roleOf(team, agent);
      const messages = observation.messages.map((m) => ({ ...m }));
      const event: TurnEvent = {
        turn,
        agent,
        role: role.id,
        policy: role.policy,
        prompt: promptText(messages),
        messages,
        completion: completion.text,
        promptTokens: completion.promptTokenIds.length,
        completionTokens: completion.tokenIds.length,
        ms: generationMs,
        teamReward: result.teamReward,
        done: result.done,
      };
      turns.push(event);
      executed.push({ agent, text: completion.text, info: result.info?.[agent] });
      const u = (usage[role.id] ??= { calls: 0, promptTokens: 0, completionTokens: 0 });
      u.calls++;
      u.promptTokens += event.promptTokens;
      u.completionTokens += event.completionTokens;
      onTurn?.(event);
    }
  };
  return { turns, executed, usage, onStep };
}

/**
 * The loaded team with a request's turn limit, one object per (team, limit): the episode runner
 * checks a team once per object, so a server's solves with the same limit share that check.
 */
function teamWithTurns(loaded: LoadedTeam, maxTurns: number): Team {
  let byTurns = teamsByTurns.get(loaded);
  if (byTurns === undefined) teamsByTurns.set(loaded, (byTurns = new Map()));
  let team = byTurns.get(maxTurns);
  if (team === undefined) byTurns.set(maxTurns, (team = { ...loaded.team, maxTurns }));
  return team;
}
const teamsByTurns = new WeakMap<LoadedTeam, Map<number, Team>>();

/**
 * One episode of a loaded team on one task. The request's signal is the one abort path: the solve
 * rejects with SolveAbortedError as soon as it fires (the work underneath stops at its next step:
 * the backend at its next token, the episode before its next generation).
 */
export function solve(
  loaded: LoadedTeam,
  input: SolveInput,
  options: SolveOptions = {},
  onTurn?: (event: TurnEvent) => void,
): Promise<SolveResult> {
  const { signal } = options;
  const work = solveEpisode(loaded, input, options, onTurn);
  return signal === undefined ? work : abortable(work, signal, (reason) => new SolveAbortedError(reason));
}

async function solveEpisode(
  loaded: LoadedTeam,
  input: SolveInput,
  options: SolveOptions,
  onTurn: ((event: TurnEvent) => void) | undefined,
): Promise<SolveResult> {
  const started = performance.now();
  const { signal } = options;
  const { maxTurns, sampling: overrides } = parseSolveOptions(options, loaded.team.maxTurns);
  const env = loaded.environment.env;
  const task: Task<unknown> = await resolveTask(loaded.environment, env, input);
  const { seed: givenSeed, ...samplingOverrides } = overrides;
  const seed = givenSeed ?? Math.floor(Math.random() * 2 ** 31);
  const team = teamWithTurns(loaded, maxTurns);
  const ctx: RolloutContext = {
    runId: `serve-${loaded.manifest.name}-v${loaded.manifest.version}`,
    step: 0,
    seed,
    env,
    team,
    policies: signalledPolicies(loaded, signal),
    ...requestSampling(loaded, team, samplingOverrides),
  };
  const taskPath = typeof input === "object" && input !== null && "generate" in input ? "generate" : "task";
  const checkPrompts = promptCheck(loaded, team, taskPath);
  const log = turnLog(team, onTurn);
  const [episode] = await runEpisodes(ctx, [task], 1, {
    // All agents' first prompts before any generation, then each stage's before it is generated.
    onStart: ([initial]) => {
      checkPrompts(team.roles.map((r) => ({ agent: r.id, observation: env.observe(initial!.state, r.id) })));
    },
    beforeGenerate: (requests) => {
      if (signal?.aborted) throw new SolveAbortedError(signal.reason);
      checkPrompts(requests);
    },
    onStep: log.onStep,
  });
  const { state, steps, judged, success } = episode!;
  return {
    task: { id: task.id, payload: task.payload },
    answer: renderAnswer(env.name, state, log.executed),
    solved: judged ? success : null,
    teamReturn: steps.reduce((sum, step) => sum + step.result.teamReward, 0),
    turns: log.turns,
    usage: log.usage,
    latencyMs: performance.now() - started,
    seed,
  };
}
