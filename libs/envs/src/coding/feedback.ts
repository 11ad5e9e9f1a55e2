/**
 * Multi-turn feedback transitions: what an agent is told between turns about its team's last
 * attempt. Mirrors CoMLRL's "external" modes in spirit:
 * - `diagnostics`: execution diagnostics: syntax error, load error, failed tests' errors, the
 *   program's output, and (only with `revealTests`) the failing assert statements themselves;
 * - `passFail`: only whether the tests passed;
 * - `selfRevision`: no information, just "review and revise";
 * - `expert`: a stronger model behind an OpenAI-compatible endpoint reads the problem, the code
 *   and the diagnostics and writes the feedback.
 * Revealing hidden tests makes evaluation optimistic: keep `revealTests` off when measuring.
 */
import type { AgentId } from "@troupe/core";
import type { CodeRunner } from "@troupe/sandbox";
import type { CodingProblem } from "./dataset.ts";
import { type ChatClientOptions, chatClientOptions, chatCompletion } from "./expert-client.ts";
import type { HarnessOptions, TestReport } from "./harness.ts";

export interface FeedbackContext {
  readonly problem: CodingProblem;
  readonly agent: AgentId;
  /** What this agent is responsible for, in words. */
  readonly responsibility: string;
  /** This agent's last code. */
  readonly code: string;
  /** The whole program that was tested. */
  readonly program: string;
  /** The test run the feedback is about. */
  readonly report: TestReport;
  readonly turn: number;
}

export interface FeedbackTransition {
  readonly name: string;
  feedback(context: FeedbackContext): Promise<string>;
}

/**
 * Which reward the coding teams get: `strict` (the default) pays collaboration and tests only for
 * what they achieve when run; `paper` is the published reward (CoMLRL's tiers for helper + main,
 * Stronger-MAS's tester reward), kept to reproduce the papers. Each environment documents both.
 */
export const CODING_REWARDS = ["strict", "paper"] as const;
export type CodingReward = (typeof CODING_REWARDS)[number];

/**
 * An option that takes one of two values, checked (callers outside TypeScript can pass anything):
 * `env: name must be "a" or "b", got …`.
 */
export function checkChoice<T extends string>(
  env: string,
  name: string,
  choices: readonly [T, T],
  value: unknown,
): T {
  if (!choices.includes(value as T))
    throw new Error(
      `${env}: ${name} must be "${choices[0]}" or "${choices[1]}", got ${JSON.stringify(value)}`,
    );
  return value as T;
}

/** The `reward` option, checked. */
export function checkReward(env: string, reward: unknown): CodingReward {
  return checkChoice(env, "reward", CODING_REWARDS, reward);
}

/** Options of the multi-turn coding environments (helper + main, coder + tester); defaults per environment. */
export interface CodingEnvOptions {
  /** Runs the model-written code (the sandbox). */
  readonly runner: CodeRunner;
  /** `strict` (default) or `paper`: see `CodingReward`. */
  readonly reward?: CodingReward;
  /** Turns per episode. */
  readonly maxTurns?: number;
  /** What agents are told between turns. */
  readonly feedback?: FeedbackTransition;
  readonly harness?: Partial<HarnessOptions>;
  /**
   * What an agent reads besides the problem: `full` (default) the paper's instructions; `brief` one
   * line naming its role and what to write (`# main: write f, may call aux`), the problem without
   * fences: a byte-level model trained from scratch reads every character.
   */
  readonly prompt?: CodingPrompt;
}

export const CODING_PROMPTS = ["full", "brief"] as const;
export type CodingPrompt = (typeof CODING_PROMPTS)[number];

/** Lines of diagnostics about a test run, shared by `diagnostics` and `expert`. */
export function describeReport(report: TestReport, revealTests: boolean, maxFailures = 5): string {
  const lines: string[] = [];
  if (report.harnessError) lines.push(`The run failed: ${report.harnessError}`);
  if (report.syntaxError) lines.push(`Syntax error: ${report.syntaxError}`);
  if (report.loadError) lines.push(`Error while loading the code: ${report.loadError}`);
  if (report.total > 0) lines.push(`Passed ${report.passed} of ${report.total} tests.`);
  const failures = report.tests.filter((t) => !t.passed);
  for (const t of failures.slice(0, maxFailures)) {
    const what = t.error ?? "failed";
    lines.push(revealTests ? `- ${t.source}\n  -> ${what}` : `- a test failed: ${what}`);
  }
  if (failures.length > maxFailures) lines.push(`- … and ${failures.length - maxFailures} more failures`);
  for (const e of report.setupErrors.slice(0, 3))
    lines.push(`Test setup error: ${revealTests ? e : e.replace(/^.* -> /, "")}`);
  if (report.output.trim()) lines.push(`Your code printed:\n${report.output.trim()}`);
  return lines.join("\n");
}

export function diagnosticsFeedback(options: { readonly revealTests?: boolean } = {}): FeedbackTransition {
  const revealTests = options.revealTests ?? false;
  return {
    name: revealTests ? "diagnostics+tests" : "diagnostics",
    async feedback(ctx) {
      const text = describeReport(ctx.report, revealTests);
      return `Execution feedback on your team's last attempt:\n${text || "No diagnostics."}\nFix the problems in ${ctx.responsibility}.`;
    },
  };
}

export function passFailFeedback(): FeedbackTransition {
  return {
    name: "pass-fail",
    async feedback(ctx) {
      const ok = !ctx.report.harnessError && ctx.report.total > 0 && ctx.report.passed === ctx.report.total;
      return ok ? "Your team's last attempt passed the tests." : "Your team's last attempt failed the tests.";
    },
  };
}

export function selfRevisionFeedback(): FeedbackTransition {
  return {
    name: "self-revision",
    async feedback(ctx) {
      return `Review your previous code for ${ctx.responsibility} and revise it if it can be improved.`;
    },
  };
}

export interface ExpertFeedbackOptions extends Partial<ChatClientOptions> {
  /** Let the expert see failing assert statements. */
  readonly revealTests?: boolean;
  /** Injected fetch (defaults to the global one). */
  readonly fetch?: typeof fetch;
}

export const EXPERT_SYSTEM_PROMPT =
  "You are an expert Python reviewer. Given a programming problem, a team's code and its test " +
  "diagnostics, write short, concrete feedback for one team member: what is wrong and how to fix " +
  "it. Do not write the full solution.";

/** Feedback written by a model behind an OpenAI-compatible chat endpoint. */
export function expertFeedback(options: ExpertFeedbackOptions = {}): FeedbackTransition {
  const { revealTests = false, fetch: fetchImpl, ...clientOverrides } = options;
  const client = chatClientOptions(clientOverrides);
  return {
    name: "expert",
    async feedback(ctx) {
      const user = [
        `Problem:\n${ctx.problem.prompt}`,
        `Team member "${ctx.agent}" is responsible for ${ctx.responsibility}. Their code:\n${ctx.code || "(nothing)"}`,
        `The whole program that was tested:\n${ctx.program}`,
        `Diagnostics:\n${describeReport(ctx.report, revealTests) || "none"}`,
        `Write feedback for "${ctx.agent}".`,
      ].join("\n\n");
      const text = await chatCompletion(
        client,
        [
          { role: "system", content: EXPERT_SYSTEM_PROMPT },
          { role: "user", content: user },
        ],
        fetchImpl,
      );
      return `Expert feedback: ${text.trim()}`;
    },
  };
}
