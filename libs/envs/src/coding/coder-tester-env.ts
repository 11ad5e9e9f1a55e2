/**
 * Coder + tester (Stronger-MAS / AT-GRPO coding workflow): the tester writes unit tests (assert
 * statements calling the entry point), the coder writes the function. They may act in parallel
 * or one after the other (any subset of agents per step); each sees the other's latest work and
 * the result of running the code against the tests. The episode ends when the current code passes
 * the current generated tests (at least one), or after the coder's `maxTurns`-th attempt.
 *
 * | reward            | value                                                                                 |
 * |-------------------|---------------------------------------------------------------------------------------|
 * | team (per step)   | 1 on the step the episode ends if the code passes every hidden (dataset) test, else 0 |
 * | coder (local)     | `tests`: fraction of hidden tests its code passes; `tiers`: the single agent's tiers, over their maximum (on steps where the coder acted) |
 * | tester (local)    | on steps where the tester acted: `strict` validity · discrimination; `paper` 0.5 · validity + 0.5 · discrimination |
 *
 * validity = fraction of the tester's asserts the canonical solution passes. success = the code
 * passes every hidden test.
 * - The coder's `tests` reward (the default) is Stronger-MAS's. `tiers` pays the coder what the
 *   single agent of `roles: single` is paid (aux-main-reward.ts: 0.6 for a function defined with a
 *   return, 0.5 more when the program compiles, 1.0 × the share of hidden tests passed; over 2.1),
 *   so a team and the single agent differ by the tester, not by the coder's reward. At toy scale
 *   the coder's `tests` reward pays nothing to most groups (code that does not compile and code
 *   that computes the wrong value both earn 0).
 * - `paper` (Stronger-MAS): discrimination = fraction of known-wrong programs its tests reject
 *   (fail at least one assert): a stub returning `None`, plus the coder's current code when it
 *   fails a hidden test. A tester that writes `assert f(<example>) is not None` earns ~1.
 * - `strict` (the default): the wrong programs are the reference's mutants (mutants.ts: the stub,
 *   constant returns, off-by-one, dropped branches; only those the hidden tests tell from the
 *   reference), plus the coder's failing code as above; a program is rejected only by an assert
 *   the reference passes (an assert that fails everywhere proves nothing). So `is not None`
 *   earns the stub's share only (1 / the number of mutants), and a wrong assert costs its share
 *   of validity.
 */
import type { AgentId, Environment } from "@troupe/core";
import { checkMaxTurns, type TurnState, textEnvironment } from "../text-env.ts";
import { isAllPassed } from "./aux-main-env.ts";
import { soloTiersShare } from "./aux-main-reward.ts";
import type { CodingProblem } from "./dataset.ts";
import { extractCode } from "./extract.ts";
import { type CodingEnvOptions, checkChoice, checkReward, diagnosticsFeedback } from "./feedback.ts";
import {
  type HarnessJob,
  passFraction,
  runTests,
  type TestCaseResult,
  type TestReport,
  type TestStyle,
  type TestSummary,
  testSummary,
} from "./harness.ts";
import { mutantCache, referenceProgram } from "./mutants.ts";

export const CODER_TESTER_AGENTS = ["coder", "tester"] as const;

export const CODER_TESTER_REWARDS = {
  success: 1,
  testerValidityWeight: 0.5,
  testerDiscriminationWeight: 0.5,
} as const;

/**
 * `maxTurns`: the coder's attempts per episode (default 3). `feedback`: what agents read about the
 * code-vs-generated-tests run; default diagnostics including the (teammate-written) asserts.
 * `reward`: the tester's reward, `strict` (default) or `paper`. `judgeTester`: see the field.
 */
export interface CoderTesterEnvOptions extends CodingEnvOptions {
  /**
   * Whether the tester's tests are judged (its local reward: against the reference and its mutants,
   * or a stub). Default true; false for held-out evaluation, which reads only the team's success:
   * the mutants' generation, screening and runs were most of an evaluation's sandbox time.
   */
  readonly judgeTester?: boolean;
  /** The coder's local reward: `tests` (default, Stronger-MAS: share of hidden tests passed) or `tiers`. */
  readonly coderReward?: CoderReward;
}

export const CODER_REWARDS = ["tests", "tiers"] as const;
export type CoderReward = (typeof CODER_REWARDS)[number];

export const defaultCoderTesterOptions = { maxTurns: 3, reward: "strict" } as const;

export interface StrictTesterReward {
  /** Fraction of the tester's asserts the reference passes. */
  readonly validity: number;
  /** Fraction of the wrong programs rejected. */
  readonly discrimination: number;
  /** How many wrong programs the tests ran against. */
  readonly wrongPrograms: number;
  readonly rejected: number;
  /** validity · discrimination. */
  readonly reward: number;
}

/**
 * The tester's `strict` reward from the run of its tests against the reference program with the
 * mutants as `variants`, plus other wrong programs' outcomes (the coder's failing code). A wrong
 * program is rejected when an assert the reference passes fails on it; an assert the program could
 * no longer answer (`noResult`: an earlier one killed it) rejects nothing. 0 without wrong programs.
 */
export function strictTesterReward(
  reference: TestReport,
  otherWrong: readonly (readonly TestCaseResult[])[] = [],
): StrictTesterReward {
  const valid = reference.tests.map((t) => t.passed);
  const wrong = [...(reference.variants ?? []).map((v) => v.tests), ...otherWrong];
  const rejected = wrong.filter((cases) => cases.some((c, i) => valid[i] && !c.passed && !c.noResult)).length;
  const validity = passFraction(reference);
  const discrimination = wrong.length > 0 ? rejected / wrong.length : 0;
  return {
    validity,
    discrimination,
    wrongPrograms: wrong.length,
    rejected,
    reward: validity * discrimination,
  };
}

/** `turn` counts the coder's attempts. */
export interface CoderTesterState extends TurnState<CodingProblem> {
  readonly code: string | null;
  readonly tests: string | null;
  /** Hidden-test result of `code`. */
  readonly hidden: TestSummary | null;
  /** Result of `code` against `tests`. */
  readonly generated: TestSummary | null;
  readonly feedback: Readonly<Record<AgentId, string>>;
}

/** A program that defines the entry point as a function returning None: wrong for every HumanEval problem. */
export function stubProgram(problem: CodingProblem): string {
  return `${problem.prompt}\n\ndef ${problem.entryPoint}(*args, **kwargs):\n    return None\n`;
}

export function coderProgram(problem: CodingProblem, code: string): string {
  return `${problem.prompt}\n\n${code}\n`;
}

export function canonicalProgram(problem: CodingProblem): string {
  return referenceProgram(problem);
}

function instructions(agent: AgentId, p: CodingProblem): string {
  if (agent === "tester") {
    return (
      `You are the tester in a two-person team. Write unit tests for \`${p.entryPoint}\` described below: ` +
      `assert statements that call \`${p.entryPoint}(...)\` directly and check the result. Your teammate writes ` +
      "the code. Answer with one ```python block of asserts only."
    );
  }
  return (
    `You are the coder in a two-person team. Implement \`${p.entryPoint}\` described below. Your teammate ` +
    "writes unit tests for it. Answer with one ```python block containing the complete function."
  );
}

/** The brief prompt's role line. */
function briefInstructions(agent: AgentId, p: CodingProblem): string {
  return agent === "tester" ? `# tester: write asserts on ${p.entryPoint}` : `# coder: write ${p.entryPoint}`;
}

/** What `agent` reads: its role, the problem, its teammate's and its own last answer, and its feedback. */
function coderTesterPrompt(state: CoderTesterState, agent: AgentId, brief: boolean): string {
  const p = state.problem;
  const own = agent === "coder" ? state.code : state.tests;
  const other = agent === "coder" ? state.tests : state.code;
  if (brief) {
    // The teammate's work comes before the problem, so the problem's docstring is what a byte-level
    // model read last before it writes: with the tester's asserts between them, a tiny coder copied
    // the asserts' numbers (`return n%4+1` for `mod 5, then add 2` below `assert f(42)==6`).
    let text = `${briefInstructions(agent, p)}\n`;
    if (other !== null) text += `# ${agent === "coder" ? "tests" : "code"}:\n${other}\n`;
    text += p.prompt;
    if (own !== null) text += `# yours:\n${own}\n`;
    if (state.feedback[agent]) text += state.feedback[agent];
    return text;
  }
  let text = `${instructions(agent, p)}\n\nProblem:\n\`\`\`python\n${p.prompt}\`\`\``;
  if (other !== null)
    text += `\n\nYour teammate's ${agent === "coder" ? "tests" : "code"}:\n\`\`\`python\n${other}\n\`\`\``;
  if (own !== null)
    text += `\n\nYour previous ${agent === "coder" ? "code" : "tests"}:\n\`\`\`python\n${own}\n\`\`\``;
  if (state.feedback[agent]) text += `\n\n${state.feedback[agent]}`;
  return text;
}

/**
 * The tester's local reward from this turn's runs, with its parts. strict: the asserts against
 * the reference and its mutants (`strictTesterReward`); otherwise validity on the reference and
 * discrimination against a stub and a failing coder. Undefined when the tester's tests were not judged.
 */
function testerReward(
  runs: {
    readonly mutantReport: TestReport | undefined;
    readonly canonicalReport: TestReport | undefined;
    readonly stubReport: TestReport | undefined;
    readonly generatedReport: TestReport | undefined;
  },
  hiddenAllPassed: boolean,
): { parts: { validity: number; discrimination: number } | StrictTesterReward; reward: number } | undefined {
  const { mutantReport, canonicalReport, stubReport, generatedReport } = runs;
  if (mutantReport) {
    const coderFails = generatedReport && !hiddenAllPassed ? [generatedReport.tests] : [];
    const parts = strictTesterReward(mutantReport, coderFails);
    return { parts, reward: parts.reward };
  }
  if (canonicalReport && stubReport) {
    const validity = passFraction(canonicalReport);
    const rejections = [rejects(stubReport)];
    if (generatedReport && !hiddenAllPassed) rejections.push(rejects(generatedReport));
    const discrimination = rejections.filter(Boolean).length / rejections.length;
    return {
      parts: { validity, discrimination },
      reward:
        CODER_TESTER_REWARDS.testerValidityWeight * validity +
        CODER_TESTER_REWARDS.testerDiscriminationWeight * discrimination,
    };
  }
  return undefined;
}

/**
 * Runs of `tests` against `program` on a problem. The prompt is trusted: its helpers run in the
 * checker, whatever the coder redefines. Under the `tiers` reward the coder's hidden-test run also
 * asks for its function's static facts (`functions`: defined, a return), which that reward reads.
 */
function problemRunner(options: CoderTesterEnvOptions) {
  return (
    program: string,
    tests: string,
    style: TestStyle,
    problem: CodingProblem,
    functions?: HarnessJob["functions"],
  ): Promise<TestReport> =>
    runTests(
      options.runner,
      {
        program,
        tests,
        style,
        entryPoint: problem.entryPoint,
        trusted: problem.prompt,
        ...(functions ? { functions } : {}),
      },
      options.harness,
    );
}

export function coderTesterEnv(options: CoderTesterEnvOptions): Environment<CoderTesterState, CodingProblem> {
  const maxTurns = checkMaxTurns("coderTesterEnv", options.maxTurns ?? defaultCoderTesterOptions.maxTurns);
  const feedback = options.feedback ?? diagnosticsFeedback({ revealTests: true });
  const strict =
    checkReward("coderTesterEnv", options.reward ?? defaultCoderTesterOptions.reward) === "strict";
  const tiers =
    checkChoice("coderTesterEnv", "coderReward", CODER_REWARDS, options.coderReward ?? "tests") === "tiers";
  const run = problemRunner(options);
  // strict: the tester's asserts against the reference and against each of its mutants, each in
  // a fresh run of its own (`variants`): nothing the asserts bind, import or write while the
  // reference runs is there when a mutant does, so "compare with what the first pass saw" finds
  // no reference to compare with.
  const mutantsOf = mutantCache(options.runner, options.harness);
  const runAgainstMutants = async (tests: string, problem: CodingProblem) => {
    const set = await mutantsOf(problem);
    return runTests(
      options.runner,
      {
        program: set.program,
        tests,
        style: "asserts",
        entryPoint: problem.entryPoint,
        trusted: problem.prompt,
        variants: set.mutants.map((m) => m.name),
        // An assert the reference fails rejects no mutant, so with none passing the reward is 0
        // whatever the mutants answer: their runs are skipped.
        variantsWhen: "some-test-passes",
      },
      options.harness,
    );
  };
  return textEnvironment<CoderTesterState, CodingProblem>({
    name: "humaneval-coder-tester",
    agents: CODER_TESTER_AGENTS,
    rewardBounds: { team: [0, CODER_TESTER_REWARDS.success], local: [0, 1] },
    reset: (task) => ({
      problem: task.payload,
      turn: 0,
      maxTurns,
      code: null,
      tests: null,
      hidden: null,
      generated: null,
      feedback: {},
      done: false,
    }),
    prompt: (state, agent) => coderTesterPrompt(state, agent, options.prompt === "brief"),
    async step(state, actions) {
      const p = state.problem;
      const coderActed = actions.coder !== undefined;
      const testerActed = actions.tester !== undefined;
      const code = coderActed ? extractCode(actions.coder!) : state.code;
      const tests = testerActed ? extractCode(actions.tester!) : state.tests;

      // Without hidden tests (a served prompt) the coder's code runs against the tester's tests
      // only, and neither the code nor the tests are judged (the tester's reward needs the reference).
      const labelled = p.test !== "";
      const judgeTests = labelled && testerActed && tests !== null && (options.judgeTester ?? true);
      const [hiddenReport, generatedReport, canonicalReport, stubReport, mutantReport] = await Promise.all([
        labelled && coderActed && code !== null
          ? run(
              coderProgram(p, code),
              p.test,
              "check",
              p,
              tiers ? [{ label: "coder", code, name: p.entryPoint }] : undefined,
            )
          : undefined,
        code !== null && tests !== null ? run(coderProgram(p, code), tests, "asserts", p) : undefined,
        judgeTests && !strict ? run(canonicalProgram(p), tests, "asserts", p) : undefined,
        judgeTests && !strict ? run(stubProgram(p), tests, "asserts", p) : undefined,
        judgeTests && strict ? runAgainstMutants(tests, p) : undefined,
      ]);
      const hidden = hiddenReport ? testSummary(hiddenReport) : state.hidden;
      const generated = generatedReport ? testSummary(generatedReport) : null;
      const hiddenAllPassed = hidden !== null && hidden.total > 0 && hidden.passed === hidden.total;

      const localRewards: Record<AgentId, number> = {};
      if (coderActed) {
        if (tiers) localRewards.coder = hiddenReport ? soloTiersShare(hiddenReport, "coder") : 0;
        else localRewards.coder = hidden ? passFraction(hidden) : 0;
      }
      const tester = testerReward(
        { mutantReport, canonicalReport, stubReport, generatedReport },
        hiddenAllPassed,
      );
      if (tester) localRewards.tester = tester.reward;
      const testerParts = tester?.parts;

      const turn = state.turn + (coderActed ? 1 : 0);
      const testsPassed = generatedReport !== undefined && isAllPassed(generatedReport);
      const done = testsPassed || turn >= state.maxTurns;
      const success = hiddenAllPassed;
      const nextFeedback: Record<AgentId, string> = {};
      if (!done && generatedReport && code !== null) {
        for (const agent of CODER_TESTER_AGENTS) {
          nextFeedback[agent] = await feedback.feedback({
            problem: p,
            agent,
            responsibility: agent === "coder" ? `the function \`${p.entryPoint}\`` : "the unit tests",
            code: agent === "coder" ? code : (tests ?? ""),
            program: coderProgram(p, code),
            report: generatedReport,
            turn: state.turn,
          });
        }
      }
      return {
        state: { ...state, turn, code, tests, hidden, generated, feedback: nextFeedback, done },
        teamReward: done && success ? CODER_TESTER_REWARDS.success : 0,
        localRewards,
        done,
        ...(labelled ? { success } : {}),
        info: { hidden, generated, tester: testerParts, generatedReport, hiddenReport, mutantReport },
      };
    },
  });
}

/** Tests reject a program when at least one assert fails on it (or it cannot even load). */
function rejects(report: TestReport): boolean {
  return report.total > 0 && report.passed < report.total;
}
