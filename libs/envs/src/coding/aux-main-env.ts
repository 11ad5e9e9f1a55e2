/**
 * Helper + main (CoMLRL MAGRPO code generation): two agents solve one HumanEval problem
 * together, in parallel. The helper writes a function `aux(...)`; main writes the entry-point
 * function and may call `aux`. Neither sees the other's code on the first turn. The team is
 * scored with CoMLRL's tiered reward (aux-main-reward.ts): under `reward: "strict"` (the default)
 * the collaboration tiers need every test to pass and `aux`'s work to reach main's return value
 * when run; `reward: "paper"` is CoMLRL's reward as published. With `maxTurns > 1`, a failed attempt
 * is followed by another turn in which each agent sees both codes and the feedback transition's
 * message (execution diagnostics by default).
 *
 * Rewards per step: team = tiered reward in [0, 4]; local = the agent's own structure tier
 * (helper: 0.4 when `aux` is defined with a return, main: 0.6 when the entry point is).
 * The episode ends when every hidden test passes or after `maxTurns` turns.
 */
import type { AgentId, Environment } from "@troupe/core";
import { checkMaxTurns, type TurnState, textEnvironment } from "../text-env.ts";
import { AUX_MAIN_REWARD_TIERS, type AuxMainRewardBreakdown, auxMainReward } from "./aux-main-reward.ts";
import type { CodingProblem } from "./dataset.ts";
import { extractCode } from "./extract.ts";
import { type CodingEnvOptions, checkReward, diagnosticsFeedback } from "./feedback.ts";
import { runTests, type TestReport, type TestSummary, testSummary } from "./harness.ts";

export const AUX_MAIN_AGENTS = ["helper", "main"] as const;

/**
 * `maxTurns`: turns per episode (default 1: CoMLRL's setup is single-turn). `feedback`: default
 * execution diagnostics without the hidden asserts. `reward`: `strict` (default) or `paper`.
 * `solo`: main alone writes the whole function (no helper; the single-agent baseline), scored by
 * the same tiers (those that need `aux` are never paid).
 */
export interface AuxMainEnvOptions extends CodingEnvOptions {
  readonly solo?: boolean;
}

/** The check module of a task without hidden tests: it loads the program and asserts nothing. */
export const NO_HIDDEN_TESTS = "def check(candidate):\n    pass\n";

export const defaultAuxMainOptions = { maxTurns: 1, reward: "strict" } as const;

export interface AuxMainAttempt {
  readonly aux: string;
  readonly main: string;
  readonly reward: AuxMainRewardBreakdown;
  readonly passed: number;
  readonly total: number;
  /** The hidden tests' outcomes. */
  readonly tests: TestSummary;
  /** Feedback each agent reads on the next turn (empty on the last turn). */
  readonly feedback: Readonly<Record<AgentId, string>>;
}

export interface AuxMainState extends TurnState<CodingProblem> {
  readonly attempts: readonly AuxMainAttempt[];
}

const RESPONSIBILITY: Record<AgentId, (p: CodingProblem) => string> = {
  helper: () => "the helper function `aux`",
  main: (p) => `the main function \`${p.entryPoint}\``,
};

function instructions(agent: AgentId, p: CodingProblem, solo: boolean): string {
  if (solo) return `Implement \`${p.entryPoint}\`. Answer with one \`\`\`python block.`;
  if (agent === "helper") {
    return (
      `You are the helper in a two-programmer team solving the Python problem below. Your teammate writes \`${p.entryPoint}\` ` +
      "at the same time and can call your function. Write ONE helper function named `aux` that does a useful " +
      "part of the work (with any imports it needs). Do not write the main function. Answer with one ```python block."
    );
  }
  return (
    `You are the main programmer in a two-programmer team solving the Python problem below. Implement \`${p.entryPoint}\`. ` +
    "Your teammate writes a helper function `aux(...)` at the same time; you may call it, assuming it does a " +
    "useful part of the work. Do not define `aux` yourself. Answer with one ```python block."
  );
}

/** The brief prompt's role line. */
function briefInstructions(agent: AgentId, p: CodingProblem, solo: boolean): string {
  if (solo) return `# write ${p.entryPoint}`;
  return agent === "helper" ? "# helper: write aux" : `# main: write ${p.entryPoint}, may call aux`;
}

/** The program the tests run: the prompt (helpers, imports, the stub), then aux, then main. */
export function auxMainProgram(problem: CodingProblem, aux: string, main: string): string {
  return `${problem.prompt}\n\n${aux}\n\n${main}\n`;
}

export function auxMainEnv(options: AuxMainEnvOptions): Environment<AuxMainState, CodingProblem> {
  const maxTurns = checkMaxTurns("auxMainEnv", options.maxTurns ?? defaultAuxMainOptions.maxTurns);
  const feedback = options.feedback ?? diagnosticsFeedback();
  const rewardKind = checkReward("auxMainEnv", options.reward ?? defaultAuxMainOptions.reward);
  const solo = options.solo ?? false;
  const brief = options.prompt === "brief";
  const agents: readonly AgentId[] = solo ? ["main"] : AUX_MAIN_AGENTS;
  return textEnvironment<AuxMainState, CodingProblem>({
    name: "humaneval-aux-main",
    agents,
    rewardBounds: { team: [0, AUX_MAIN_REWARD_TIERS.max], local: [0, AUX_MAIN_REWARD_TIERS.mainDefined] },
    reset: (task) => ({ problem: task.payload, turn: 0, maxTurns, attempts: [], done: false }),
    prompt(state, agent) {
      const p = state.problem;
      const last = state.attempts.at(-1);
      if (brief) {
        let text = `${briefInstructions(agent, p, solo)}\n${p.prompt}`;
        if (last) {
          text += `# yours:\n${agent === "helper" ? last.aux : last.main}\n`;
          if (!solo) text += `# teammate:\n${agent === "helper" ? last.main : last.aux}\n`;
          text += last.feedback[agent] ?? "";
        }
        return text;
      }
      let text = `${instructions(agent, p, solo)}\n\nProblem:\n\`\`\`python\n${p.prompt}\`\`\``;
      if (last) {
        const own = agent === "helper" ? last.aux : last.main;
        const other = agent === "helper" ? last.main : last.aux;
        text +=
          `\n\nTurn ${state.turn + 1} of ${state.maxTurns}. Your previous code:\n\`\`\`python\n${own}\n\`\`\`` +
          `\nYour teammate's previous code:\n\`\`\`python\n${other}\n\`\`\`\n${last.feedback[agent] ?? ""}`;
      }
      return text;
    },
    async step(state, actions) {
      const p = state.problem;
      const aux = extractCode(actions.helper ?? "");
      const main = extractCode(actions.main ?? "");
      const program = auxMainProgram(p, aux, main);
      // A prompt without hidden tests (a served task) still runs: syntax and load errors reach the
      // feedback, and nothing is judged.
      const labelled = p.test !== "";
      const report = await runTests(
        options.runner,
        {
          program,
          tests: labelled ? p.test : NO_HIDDEN_TESTS,
          style: "check",
          entryPoint: p.entryPoint,
          trusted: p.prompt,
          functions: [
            { label: "aux", code: aux, name: "aux" },
            { label: "main", code: main, name: p.entryPoint, callee: "aux" },
          ],
          // strict: does aux's work reach main's return value when the tests run?
          ...(rewardKind === "strict" ? { dependence: { callee: "aux" } } : {}),
        },
        options.harness,
      );
      const reward = auxMainReward(report, rewardKind);
      const success = labelled && isAllPassed(report);
      const turn = state.turn + 1;
      const done = success || turn >= state.maxTurns;
      const feedbackByAgent: Record<AgentId, string> = {};
      if (!done) {
        for (const agent of agents) {
          feedbackByAgent[agent] = await feedback.feedback({
            problem: p,
            agent,
            responsibility: RESPONSIBILITY[agent]!(p),
            code: agent === "helper" ? aux : main,
            program,
            report,
            turn: state.turn,
          });
        }
      }
      const attempt: AuxMainAttempt = {
        aux,
        main,
        reward,
        passed: report.passed,
        total: report.total,
        tests: testSummary(report),
        feedback: feedbackByAgent,
      };
      return {
        state: { ...state, turn, attempts: [...state.attempts, attempt], done },
        teamReward: reward.total,
        localRewards: (solo
          ? { main: reward.mainDefined }
          : { helper: reward.auxDefined, main: reward.mainDefined }) as Record<AgentId, number>,
        done,
        ...(labelled ? { success } : {}),
        info: { reward, report },
      };
    },
  });
}

export function isAllPassed(report: TestReport): boolean {
  return (
    report.harnessError === undefined && report.syntaxOk && report.total > 0 && report.passed === report.total
  );
}
