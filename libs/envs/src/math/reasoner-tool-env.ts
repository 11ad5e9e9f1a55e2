/**
 * Reasoner + tool agent on GSM8K-style problems (Stronger-MAS / AT-GRPO math workflow). Each turn
 * both agents answer in parallel: the reasoner in prose, ending with `\boxed{answer}`; the tool
 * agent with a ```python block whose program prints the answer on its last line (run in the
 * sandbox). From the second turn on, each sees the other's last answer (and the tool sees its own
 * program's errors). The episode ends when the two answers agree, or after `maxTurns` turns.
 *
 * | reward          | value                                                                                   |
 * |-----------------|-----------------------------------------------------------------------------------------|
 * | team (per step) | 1 on the final step if the team's answer equals the reference, else 0                   |
 * | local, format   | +0.2: reasoner used `\boxed{}` or `####`; tool's program ran cleanly and printed a number |
 * | local, correct  | +0.8: the agent's own answer equals the reference                                       |
 *
 * The team's answer is the agreed one; when the agents never agree, it is `fallbackAnswer`'s
 * (default: the reasoner's). success = the team's answer equals the reference.
 *
 * `single: true` is the single-agent baseline: the reasoner alone, no tool. It answers until two of
 * its consecutive answers agree (its own check, in place of the teammate's), or `maxTurns`; its
 * last answer is the answer.
 */
import type { AgentId, Environment } from "@troupe/core";
import type { CodeRunner, RunStatus } from "@troupe/sandbox";
import { extractCode } from "../coding/extract.ts";
import { checkMaxTurns, type TurnState, textEnvironment } from "../text-env.ts";
import { answersMatch, extractAnswer } from "./answer.ts";
import type { MathProblem } from "./dataset.ts";

export const MATH_AGENTS = ["reasoner", "tool"] as const;
const SINGLE_AGENT = ["reasoner"] as const;

export const MATH_REWARDS = { teamSuccess: 1, format: 0.2, correct: 0.8 } as const;

export interface ReasonerToolEnvOptions {
  /** Runs the tool agent's programs; the single agent (no tool) needs none. */
  readonly runner?: CodeRunner | undefined;
  readonly maxTurns?: number;
  /** Whose answer counts when the agents never agree. */
  readonly fallbackAnswer?: "reasoner" | "tool" | "none";
  /** Wall-clock limit of the tool's program, ms. */
  readonly toolWallMs?: number;
  /** Characters of the tool's output/errors shown back to it. */
  readonly maxFeedbackChars?: number;
  /** The reasoner alone (the single-agent baseline): no tool agent. */
  readonly single?: boolean;
}

export const defaultReasonerToolOptions = {
  maxTurns: 3,
  fallbackAnswer: "reasoner",
  toolWallMs: 5000,
  maxFeedbackChars: 500,
  single: false,
} as const;

export interface AgentAnswer {
  readonly answer: number | null;
  readonly formatOk: boolean;
  /** Tool only: how its program ended and what it wrote to stderr (clipped). */
  readonly runStatus?: RunStatus | "no-code";
  readonly error?: string;
  /** Tool only: the program it ran and what it printed (the tail, clipped), for the answer of a solve. */
  readonly program?: string;
  readonly output?: string;
}

export interface ReasonerToolState extends TurnState<MathProblem> {
  readonly last: Readonly<Partial<Record<AgentId, AgentAnswer>>>;
  /** The team's answer after the last step (the agreed one, else the fallback's). */
  readonly teamAnswer: number | null;
  readonly agree: boolean;
}

/** The reasoner's answer: extracted from its text; format is ok for `\boxed{}` or `####`. */
export function reasonerAnswer(text: string): AgentAnswer {
  const extracted = extractAnswer(text);
  return {
    answer: extracted?.value ?? null,
    formatOk: extracted !== null && extracted.source !== "last-number" && extracted.value !== null,
  };
}

/** Runs the tool's program; its answer is the last number on the last non-empty line it printed. */
export async function toolAnswer(
  runner: CodeRunner,
  text: string,
  wallMs: number,
  maxChars: number,
): Promise<AgentAnswer> {
  const code = extractCode(text);
  if (!/```/.test(text) || code.trim() === "") return { answer: null, formatOk: false, runStatus: "no-code" };
  const result = await runner.run({ language: "python", code, limits: { wallMs } });
  const lastLine =
    result.stdout
      .split("\n")
      .filter((l) => l.trim() !== "")
      .at(-1) ?? "";
  const extracted = extractAnswer(lastLine);
  const answer = extracted?.value ?? null;
  const error =
    result.status === "ok"
      ? undefined
      : result.stderr.slice(-maxChars) || `run ended with status ${result.status}`;
  return {
    answer,
    formatOk: result.status === "ok" && answer !== null,
    runStatus: result.status,
    ...(error !== undefined ? { error } : {}),
    program: code,
    output: result.stdout.slice(-maxChars),
  };
}

/** The single agent's prompt: the problem, and from the second turn on its own last answer. */
function singlePrompt(state: ReasonerToolState): string {
  let text = `Solve the math problem step by step. End with the final answer as \\boxed{number}.\n\nProblem: ${state.problem.question}`;
  if (state.turn > 0)
    text += `\n\nTurn ${state.turn + 1} of ${state.maxTurns}. Your last answer: ${fmt(state.last.reasoner)}. Check the work and answer again.`;
  return text;
}

function fmt(a: AgentAnswer | undefined): string {
  return a?.answer === null || a === undefined ? "no answer" : String(a.answer);
}

export function reasonerToolEnv(
  options: ReasonerToolEnvOptions,
): Environment<ReasonerToolState, MathProblem> {
  const o = { ...defaultReasonerToolOptions, ...options };
  checkMaxTurns("reasonerToolEnv", o.maxTurns);
  const runner = o.runner;
  if (runner === undefined && !o.single)
    throw new Error("reasonerToolEnv: the tool agent's programs need a sandbox runner");
  const agents = o.single ? SINGLE_AGENT : MATH_AGENTS;
  return textEnvironment<ReasonerToolState, MathProblem>({
    name: o.single ? "gsm8k-reasoner" : "gsm8k-reasoner-tool",
    agents,
    rewardBounds: {
      team: [0, MATH_REWARDS.teamSuccess],
      local: [0, MATH_REWARDS.format + MATH_REWARDS.correct],
    },
    reset: (task) => ({
      problem: task.payload,
      turn: 0,
      maxTurns: o.maxTurns,
      last: {},
      teamAnswer: null,
      agree: false,
      done: false,
    }),
    prompt(state, agent) {
      if (o.single) return singlePrompt(state);
      const intro =
        agent === "reasoner"
          ? "Solve the math problem step by step. Your teammate solves it with a Python program. " +
            "End with the final answer as \\boxed{number}."
          : "Solve the math problem by writing one ```python block. The program must print the final answer " +
            "(a single number) on its last line of output. Your teammate solves it by reasoning.";
      let text = `${intro}\n\nProblem: ${state.problem.question}`;
      if (state.turn > 0) {
        const other = agent === "reasoner" ? "tool" : "reasoner";
        text +=
          `\n\nTurn ${state.turn + 1} of ${state.maxTurns}. Your last answer: ${fmt(state.last[agent])}. ` +
          `Your teammate's last answer: ${fmt(state.last[other])}. The answers disagree: check the work and answer again.`;
        const err = state.last[agent]?.error;
        if (agent === "tool" && err) text += `\nYour program's error output:\n${err}`;
      }
      return text;
    },
    async step(state, actions) {
      const reference = state.problem.answer;
      const last: Partial<Record<AgentId, AgentAnswer>> = { ...state.last };
      const localRewards: Record<AgentId, number> = {};
      if (actions.reasoner !== undefined) last.reasoner = reasonerAnswer(actions.reasoner);
      if (actions.tool !== undefined && runner !== undefined)
        last.tool = await toolAnswer(runner, actions.tool, o.toolWallMs, o.maxFeedbackChars);
      for (const agent of agents) {
        if (actions[agent] === undefined) continue;
        const a = last[agent]!;
        localRewards[agent] =
          (a.formatOk ? MATH_REWARDS.format : 0) +
          (reference !== undefined && answersMatch(a.answer, reference) ? MATH_REWARDS.correct : 0);
      }
      const r = last.reasoner?.answer ?? null;
      const t = last.tool?.answer ?? null;
      // The single agent's check is its own previous answer; the team's, the teammate's.
      const agree = o.single
        ? state.turn > 0 && answersMatch(r, state.last.reasoner?.answer ?? null)
        : answersMatch(r, t);
      const turn = state.turn + 1;
      const done = agree || turn >= state.maxTurns;
      const teamAnswer =
        agree || o.single ? r : o.fallbackAnswer === "reasoner" ? r : o.fallbackAnswer === "tool" ? t : null;
      // Without the reference (a served question) the team answers and nobody judges it.
      const success = reference !== undefined && done && answersMatch(teamAnswer, reference);
      return {
        state: { ...state, turn, last, teamAnswer, agree, done },
        teamReward: success ? MATH_REWARDS.teamSuccess : 0,
        localRewards,
        done,
        ...(reference !== undefined ? { success } : {}),
        info: { reasoner: last.reasoner, tool: last.tool, agree, teamAnswer, reference },
      };
    },
  });
}
