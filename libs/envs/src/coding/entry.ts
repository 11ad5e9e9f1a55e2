/**
 * `coding` in the registry: Python function synthesis, the agents' code run against the problem's
 * hidden tests in the sandbox.
 * - `roles: helper-main` (MAGRPO / CoMLRL): helper writes `aux`, main the entry point, in parallel;
 *   CoMLRL's tiered reward; with `maxTurns > 1` each later turn follows execution feedback.
 *   `reward: strict` (default) pays the collaboration tiers only for a solution whose result
 *   depends on `aux` when run; `reward: paper` is CoMLRL's reward as published.
 * - `roles: coder-tester` (Stronger-MAS / AT-GRPO): the tester writes asserts, the coder the
 *   function, in turn; success = every hidden test passes. `reward: strict` (default) measures the
 *   tester's asserts against wrong programs derived from the reference; `paper` against a stub.
 * Training problems: HumanEval's train half (by a hash of the prompt) and MBPP (970 of its 974:
 * the four whose tests no solution can pass are left out, `MBPP_DROPPED`). Evaluation:
 * CoopHumanEval (82, the MAGRPO paper's set; helper-main only: it has no reference solutions, which
 * the tester's reward needs) or HumanEval's test half.
 * - `train: [toy]`, `test: toy`: two-step functions from templates (toy-tasks.ts), at the scale a
 *   byte-level model trained from scratch learns; they carry each role's reference, so the warm
 *   start has demonstrations. `prompt: brief` gives such a model one role line instead of the
 *   paper's instructions. `roles: single`: one agent writes the whole function, the baseline.
 */
import type { AgentId, Environment, Task } from "@troupe/core";
import type { CodeRunner } from "@troupe/sandbox";
import { z } from "zod";
import type { CodeAnswer, TestRunAnswer } from "../answer.ts";
import { checkedEnvironment, datasetTasks, defineEnvironment, textTeam } from "../entry.ts";
import { type AuxMainState, auxMainEnv, auxMainProgram } from "./aux-main-env.ts";
import { NO_AUX_MAIN_REWARD } from "./aux-main-reward.ts";
import { CODER_REWARDS, type CoderTesterState, coderProgram, coderTesterEnv } from "./coder-tester-env.ts";
import {
  CODING_MAX_CODE_CHARS,
  CODING_MAX_PROMPT_CHARS,
  type CodingProblem,
  codingTasks,
  humanEvalProblems,
} from "./dataset.ts";
import { extractCode } from "./extract.ts";
import {
  CODING_PROMPTS,
  CODING_REWARDS,
  diagnosticsFeedback,
  passFailFeedback,
  selfRevisionFeedback,
} from "./feedback.ts";
import type { TestSummary } from "./harness.ts";
import { coopHumanEvalProblems, mbppProblems } from "./mbpp.ts";
import { isToyProblem, toyProblems } from "./toy-tasks.ts";

export const CodingOptionsSchema = z
  .object({
    /** `single`: one agent writes the whole function (main alone, no helper): the single-agent baseline. */
    roles: z.enum(["helper-main", "coder-tester", "single"]).default("helper-main"),
    /** Turns per episode (helper-main: attempts with feedback between; coder-tester: coder attempts). */
    maxTurns: z.number().int().min(1).max(8).default(2),
    /** What agents read between turns: test diagnostics (never the hidden asserts), pass/fail only, or nothing. */
    feedback: z.enum(["diagnostics", "pass-fail", "self-revision"]).default("diagnostics"),
    /** Training problems. */
    train: z
      .array(z.enum(["humaneval", "mbpp", "toy"]))
      .min(1)
      .default(["humaneval", "mbpp"]),
    /** Held-out problems (validation and test). */
    test: z.enum(["coophumaneval", "humaneval", "toy"]).default("coophumaneval"),
    /** Wall-clock limit of one test, ms. */
    perTestTimeoutMs: z.number().int().min(100).max(60_000).default(3000),
    /** Wall-clock limit of one whole test run (program + every test), ms. */
    wallMs: z.number().int().min(500).max(120_000).default(10_000),
    /** `strict`: collaboration and tests are paid for what they achieve when run; `paper`: the published rewards. */
    reward: z.enum(CODING_REWARDS).default("strict"),
    /**
     * The coder's local reward of `roles: coder-tester`: `tests` (Stronger-MAS: the share of hidden
     * tests passed) or `tiers` (what the single agent is paid: defined, compiles, tests; over their
     * maximum). The other roles are paid CoMLRL's tiers whatever it says, so a compare's
     * single-agent arm, derived from a coder + tester recipe, keeps it.
     */
    coderReward: z.enum(CODER_REWARDS).optional(),
    /** What agents read besides the problem: the paper's instructions, or one role line (tiny models). */
    prompt: z.enum(CODING_PROMPTS).default("full"),
    /**
     * Run nothing: a step records the code, pays nothing and judges nothing, and the episode ends
     * after the first attempt, as a scored episode ends when the demonstration passes. Only for
     * collecting a warm start's demonstrations (`sft.environmentOptions: {unscored: true}`): their
     * observations are the scored environment's first turn, without a sandbox run per
     * demonstration (a cut demonstration's retry after feedback is not demonstrated).
     */
    unscored: z.boolean().default(false),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.roles === "coder-tester" && o.test === "coophumaneval") {
      ctx.addIssue({
        code: "custom",
        path: ["test"],
        message:
          'roles "coder-tester" needs reference solutions for the tester\'s reward, which CoopHumanEval lacks: use test: humaneval',
      });
    }
  });

/** What the agents read: the function to write (signature and docstring) and its name. */
export const CodingInputsSchema = z.object({
  taskId: z.string().min(1).max(200).default("task"),
  prompt: z.string().min(1).max(CODING_MAX_PROMPT_CHARS),
  entryPoint: z.string().regex(/^[A-Za-z_]\w*$/, "must be a Python identifier"),
});

/** What only the checker reads: the hidden tests (`check(candidate)`) and a reference solution. */
export const CodingLabelsSchema = z.object({
  test: z.string().min(1).max(CODING_MAX_CODE_CHARS),
  canonicalSolution: z.string().max(CODING_MAX_CODE_CHARS).default(""),
});

/**
 * A problem with its hidden tests is scored; a prompt alone is written (coder + tester: against
 * the tester's own tests) and not judged. "" stands for "no hidden tests" in the payload.
 */
export const CodingProblemSchema = CodingInputsSchema.extend({
  test: CodingLabelsSchema.shape.test.or(z.literal("")).default(""),
  canonicalSolution: CodingLabelsSchema.shape.canonicalSolution,
});

/** HumanEval split in two by a hash of the prompt; the halves never share a problem. */
const humanEvalHalves = () => codingTasks(humanEvalProblems());

function splits(options: z.output<typeof CodingOptionsSchema>) {
  return () => {
    const halves = humanEvalHalves();
    const train = options.train.flatMap((set): readonly CodingProblem[] =>
      set === "humaneval"
        ? halves.train.map((t) => t.payload)
        : set === "toy"
          ? toyProblems().train
          : mbppProblems(),
    );
    const test =
      options.test === "coophumaneval"
        ? coopHumanEvalProblems()
        : options.test === "toy"
          ? [...toyProblems().test]
          : halves.test.map((t) => t.payload);
    return { train, test };
  };
}

const FEEDBACK = {
  diagnostics: () => diagnosticsFeedback(),
  "pass-fail": passFailFeedback,
  "self-revision": selfRevisionFeedback,
} as const;

const testRun = (s: TestSummary | null | undefined): TestRunAnswer | null =>
  s
    ? {
        passed: s.passed,
        total: s.total,
        cases: s.cases.map((c) => ({
          source: c.source,
          passed: c.passed,
          ...(c.error ? { error: c.error } : {}),
        })),
        ...(s.error !== undefined ? { error: s.error } : {}),
      }
    : null;

function renderCoding(state: unknown): CodeAnswer {
  if (typeof state === "object" && state !== null && "attempts" in state) {
    const s = state as AuxMainState;
    const last = s.attempts.at(-1);
    return {
      kind: "code",
      entryPoint: s.problem.entryPoint,
      program: last ? auxMainProgram(s.problem, last.aux, last.main) : "",
      parts: last ? { helper: last.aux, main: last.main } : {},
      tests: s.problem.test === "" ? null : testRun(last?.tests),
      turns: s.turn,
    };
  }
  const s = state as CoderTesterState;
  return {
    kind: "code",
    entryPoint: s.problem.entryPoint,
    program: s.code !== null ? coderProgram(s.problem, s.code) : "",
    parts: {
      ...(s.code !== null ? { coder: s.code } : {}),
      ...(s.tests !== null ? { tester: s.tests } : {}),
    },
    tests: testRun(s.hidden),
    generatedTests: testRun(s.generated),
    turns: s.turn,
  };
}

const NOT_RUN: TestSummary = { passed: 0, total: 0, cases: [], error: "not run (unscored)" };

/** `env` whose steps record the agents' code and run nothing (the `unscored` option). */
function unscoredEnvironment(
  env: Environment<unknown, CodingProblem>,
  helperMain: boolean,
): Environment<unknown, CodingProblem> {
  return {
    ...env,
    async step(raw, actions) {
      const zero = Object.fromEntries(Object.keys(actions).map((agent) => [agent, 0]));
      if (helperMain) {
        const state = raw as AuxMainState;
        const turn = state.turn + 1;
        const attempt = {
          aux: extractCode(actions.helper ?? ""),
          main: extractCode(actions.main ?? ""),
          reward: NO_AUX_MAIN_REWARD,
          passed: 0,
          total: 0,
          tests: NOT_RUN,
          feedback: {},
        };
        const done = true;
        const next: AuxMainState = { ...state, turn, attempts: [...state.attempts, attempt], done };
        return { state: next, teamReward: 0, localRewards: zero, done };
      }
      const state = raw as CoderTesterState;
      const turn = state.turn + (actions.coder !== undefined ? 1 : 0);
      const done = actions.coder !== undefined;
      const next: CoderTesterState = {
        ...state,
        turn,
        code: actions.coder !== undefined ? extractCode(actions.coder) : state.code,
        tests: actions.tester !== undefined ? extractCode(actions.tester) : state.tests,
        done,
      };
      return { state: next, teamReward: 0, localRewards: zero, done };
    },
  };
}

/** The toy reference in `agent`'s form: helper `aux`, main `f` calling it, the coder's (or a single agent's) whole `f`, the tester's asserts. */
function toyDemo(
  task: Task<unknown>,
  agent: AgentId,
  roles: z.output<typeof CodingOptionsSchema>["roles"],
): string {
  if (!isToyProblem(task.payload))
    throw new Error(
      `coding: task ${task.id} has no toy reference to demonstrate (only train: [toy] has demonstrations)`,
    );
  const { toy } = task.payload;
  if (agent === "helper") return toy.aux;
  if (agent === "tester") return toy.asserts;
  return roles === "helper-main" ? toy.main : toy.whole;
}

export const codingEntry = defineEnvironment({
  description: "Python functions against hidden tests (helper + main, or coder + tester), run in the sandbox",
  options: CodingOptionsSchema,
  payload: { inputs: CodingInputsSchema, labels: CodingLabelsSchema },
  needsSandbox: () => true,
  build(options, runner: CodeRunner | undefined) {
    if (runner === undefined) throw new Error("coding: runs the agents' code and needs a sandbox runner");
    const harness = { perTestTimeoutMs: options.perTestTimeoutMs, wallMs: options.wallMs };
    const feedback = FEEDBACK[options.feedback]();
    const helperMain = options.roles !== "coder-tester";
    const coderTester = (judgeTester: boolean) =>
      coderTesterEnv({
        runner,
        maxTurns: options.maxTurns,
        harness,
        reward: options.reward,
        prompt: options.prompt,
        judgeTester,
        ...(options.coderReward ? { coderReward: options.coderReward } : {}),
        ...(options.feedback === "diagnostics" ? {} : { feedback }),
      }) as Environment<unknown, CodingProblem>;
    const scored: Environment<unknown, CodingProblem> = helperMain
      ? (auxMainEnv({
          runner,
          maxTurns: options.maxTurns,
          feedback,
          harness,
          reward: options.reward,
          prompt: options.prompt,
          solo: options.roles === "single",
        }) as Environment<unknown, CodingProblem>)
      : coderTester(true);
    const env = options.unscored ? unscoredEnvironment(scored, helperMain) : scored;
    // Evaluation reads the team's success only: coder + tester's tester is not judged there.
    const evaluationEnv = !helperMain && !options.unscored ? coderTester(false) : undefined;
    const generateTasks = datasetTasks(
      `coding-${options.train.join("+")}`,
      splits(options),
      (p: CodingProblem) => p.taskId,
    );
    return {
      env: checkedEnvironment("coding", env, CodingProblemSchema as z.ZodType<CodingProblem>),
      ...(evaluationEnv
        ? {
            evaluationEnv: checkedEnvironment(
              "coding",
              evaluationEnv,
              CodingProblemSchema as z.ZodType<CodingProblem>,
            ),
          }
        : {}),
      generateTasks,
      // The toy problems carry their reference in each role's form: the warm start's demonstrations.
      ...(options.train.every((set) => set === "toy")
        ? {
            demo: (task: Task<unknown>, _state: unknown, agent: AgentId) =>
              toyDemo(task, agent, options.roles),
          }
        : {}),
      // helper-main acts in parallel (neither sees the other's first code); coder-tester in turn,
      // the tester first so the coder's first run already meets generated tests.
      team: (specialisation) =>
        options.roles === "single"
          ? textTeam("coding-single", env.agents, specialisation, "sequential", options.maxTurns)
          : helperMain
            ? textTeam("coding-helper-main", env.agents, specialisation, "parallel", options.maxTurns)
            : textTeam(
                "coding-coder-tester",
                ["tester", "coder"],
                specialisation,
                "sequential",
                options.maxTurns,
              ),
    };
  },
  render: (state) => renderCoding(state),
});
