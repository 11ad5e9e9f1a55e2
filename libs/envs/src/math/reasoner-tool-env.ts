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
import { answersMatch, extractAnswer, questionNumbers } from "./answer.ts";
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
  /** The prompts' instructions: full sentences, or brief ones for a model trained from scratch. */
  readonly instructions?: "full" | "brief";
  /**
   * What the tool's program is given: nothing (`none`), or `numbers`: it starts with
   * `N = [...]`, the question's numbers in order, so a program can compute with them without
   * writing them out (`print(N[0]*N[1]+N[2])`). A model trained from scratch on characters does
   * not learn to copy multi-digit numbers from the question in minutes; the composition of the
   * operations, which is the tool's part of the work, it does.
   */
  readonly toolInputs?: "none" | "numbers";
}

export const defaultReasonerToolOptions = {
  maxTurns: 3,
  fallbackAnswer: "reasoner",
  toolWallMs: 5000,
  maxFeedbackChars: 500,
  single: false,
  instructions: "full",
  toolInputs: "none",
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

/**
 * Runs the tool's program (after `prelude`, e.g. the `N = [...]` of toolInputs); its answer is the
 * last number on the last non-empty line it printed.
 */
export async function toolAnswer(
  runner: CodeRunner,
  text: string,
  wallMs: number,
  maxChars: number,
  prelude = "",
): Promise<AgentAnswer> {
  const code = extractCode(text);
  if (!/```/.test(text) || code.trim() === "") return { answer: null, formatOk: false, runStatus: "no-code" };
  const result = await runner.run({ language: "python", code: prelude + code, limits: { wallMs } });
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

/** The words of the prompts: the full instructions (what a pretrained model reads) or brief ones. */
interface PromptWords {
  readonly reasoner: string;
  readonly tool: string;
  /** Added to the tool's instruction when its program is given the question's numbers. */
  readonly toolNumbers: string;
  readonly single: string;
  retry(turn: number, maxTurns: number, own: string, teammate: string): string;
  retrySingle(turn: number, maxTurns: number, own: string): string;
  error(stderr: string): string;
}

const FULL_WORDS: PromptWords = {
  reasoner:
    "Solve the math problem step by step. Your teammate solves it with a Python program. " +
    "End with the final answer as \\boxed{number}.",
  tool:
    "Solve the math problem by writing one ```python block. The program must print the final answer " +
    "(a single number) on its last line of output. Your teammate solves it by reasoning.",
  toolNumbers: " The program starts with N, the list of the problem's numbers in order.",
  single: "Solve the math problem step by step. End with the final answer as \\boxed{number}.",
  retry: (turn, maxTurns, own, teammate) =>
    `Turn ${turn} of ${maxTurns}. Your last answer: ${own}. Your teammate's last answer: ${teammate}. ` +
    "The answers disagree: check the work and answer again.",
  retrySingle: (turn, maxTurns, own) =>
    `Turn ${turn} of ${maxTurns}. Your last answer: ${own}. Check the work and answer again.`,
  error: (stderr) => `Your program's error output:\n${stderr}`,
};

/**
 * Brief instructions, for a model that learns the task from its demonstrations alone (a tiny model
 * trained from scratch reads every character of the prompt on every step: the full instructions
 * would double its sequences and teach it nothing). The error is its last line.
 */
const BRIEF_WORDS: PromptWords = {
  reasoner: "Reasoner. End with \\boxed{number}.",
  tool: "Tool. Write a ```python program that prints the answer.",
  toolNumbers: " N: the numbers.",
  single: "End with \\boxed{number}.",
  retry: (turn, maxTurns, own, teammate) => `Turn ${turn}/${maxTurns}. You: ${own}. Teammate: ${teammate}.`,
  retrySingle: (turn, maxTurns, own) => `Turn ${turn}/${maxTurns}. You: ${own}.`,
  error: (stderr) => `Error: ${stderr.trim().split("\n").at(-1) ?? ""}`,
};

/** `N = [37, 24, 15]\n`: the question's numbers, as the tool's program receives them (toolInputs). */
export function numbersPrelude(question: string): string {
  return `N = [${questionNumbers(question).join(", ")}]\n`;
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
      const words = o.instructions === "brief" ? BRIEF_WORDS : FULL_WORDS;
      const intro = o.single
        ? words.single
        : agent === "reasoner"
          ? words.reasoner
          : words.tool + (o.toolInputs === "numbers" ? words.toolNumbers : "");
      let text = `${intro}\n\nProblem: ${state.problem.question}`;
      if (state.turn === 0) return text;
      if (o.single)
        return `${text}\n\n${words.retrySingle(state.turn + 1, state.maxTurns, fmt(state.last.reasoner))}`;
      const other = agent === "reasoner" ? "tool" : "reasoner";
      text += `\n\n${words.retry(state.turn + 1, state.maxTurns, fmt(state.last[agent]), fmt(state.last[other]))}`;
      const err = state.last[agent]?.error;
      if (agent === "tool" && err) text += `\n${words.error(err)}`;
      return text;
    },
    async step(state, actions) {
      const reference = state.problem.answer;
      const last: Partial<Record<AgentId, AgentAnswer>> = { ...state.last };
      const localRewards: Record<AgentId, number> = {};
      if (actions.reasoner !== undefined) last.reasoner = reasonerAnswer(actions.reasoner);
      if (actions.tool !== undefined && runner !== undefined)
        last.tool = await toolAnswer(
          runner,
          actions.tool,
          o.toolWallMs,
          o.maxFeedbackChars,
          o.toolInputs === "numbers" ? numbersPrelude(state.problem.question) : "",
        );
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
