/**
 * `math` in the registry: a reasoner and a tool agent (Stronger-MAS / AT-GRPO) answer word
 * problems in parallel; the tool agent's Python runs in the sandbox.
 *
 * Problems (`problems`): `gsm8k` — train on GSM8K train (7,473), evaluate on GSM8K test (1,319);
 * `arithmetic` — generated two-operation problems (arithmetic.ts), at a scale a tiny model learns.
 * Roles (`roles`): `team` (reasoner + tool) or `single` (the reasoner alone, the single-agent
 * baseline).
 *
 * Demonstrations: the reasoner writes the reference solution ending in `\boxed{answer}`; once its
 * teammate's program has printed the right answer, it checks it and agrees. The tool writes a
 * program that prints the answer: for a generated problem the template's expression (the tool
 * copies, Python computes; with `toolInputs: numbers` over `N`, the question's numbers, so there is
 * nothing to copy); for GSM8K the answer itself (a format the full models adapt).
 */
import type { CodeRunner } from "@troupe/sandbox";
import { z } from "zod";
import type { MathAnswer } from "../answer.ts";
import { loadJsonlSync } from "../coding/load.ts";
import { checkedEnvironment, datasetTasks, defineEnvironment, textTeam } from "../entry.ts";
import { GSM8K_PATHS } from "../math/dataset.ts";
import { answersMatch, parseNumber } from "./answer.ts";
import {
  type ArithmeticProblem,
  arithmeticProgram,
  arithmeticTasks,
  indexedExpression,
} from "./arithmetic.ts";
import {
  Gsm8kRowSchema,
  MATH_MAX_ANSWER_CHARS,
  MATH_MAX_QUESTION_CHARS,
  type MathProblem,
} from "./dataset.ts";
import { defaultReasonerToolOptions, type ReasonerToolState, reasonerToolEnv } from "./reasoner-tool-env.ts";

export const MathOptionsSchema = z
  .object({
    maxTurns: z.number().int().min(1).max(8).default(defaultReasonerToolOptions.maxTurns),
    /** Whose answer counts when the agents never agree. */
    fallbackAnswer: z.enum(["reasoner", "tool", "none"]).default(defaultReasonerToolOptions.fallbackAnswer),
    /** Wall-clock limit of the tool's program, ms. */
    toolWallMs: z.number().int().min(100).max(60_000).default(defaultReasonerToolOptions.toolWallMs),
    /** Where the problems come from: GSM8K, or generated two-operation arithmetic (arithmetic.ts). */
    problems: z.enum(["gsm8k", "arithmetic"]).default("gsm8k"),
    /** The team (reasoner + tool), or the reasoner alone: the single-agent baseline. */
    roles: z.enum(["team", "single"]).default("team"),
    /** The prompts' instructions: full sentences, or brief ones for a tiny model trained from scratch. */
    instructions: z.enum(["full", "brief"]).default("full"),
    /**
     * What the tool's program is given: `numbers` starts it with `N = [...]`, the question's
     * numbers in order (reasoner-tool-env.ts), so it composes operations without copying digits.
     */
    toolInputs: z.enum(["none", "numbers"]).default(defaultReasonerToolOptions.toolInputs),
  })
  .strict();

/** What the agents read: the question (and a name for it). */
export const MathInputsSchema = z.object({
  id: z.string().min(1).max(200).default("question"),
  question: z.string().min(1).max(MATH_MAX_QUESTION_CHARS),
});

/** What only the reward reads: the reference answer and its worked solution (the warm start's). */
export const MathLabelsSchema = z.object({
  answer: z.number().finite(),
  solution: z.string().max(MATH_MAX_ANSWER_CHARS).default(""),
  /** A generated problem's Python expression (arithmetic.ts): what the tool's demonstration prints. */
  expression: z.string().max(200).optional(),
});

/** A question with its answer is scored; a question alone is answered and not judged. */
export const MathProblemSchema = MathInputsSchema.extend({
  answer: MathLabelsSchema.shape.answer.optional(),
  solution: MathLabelsSchema.shape.solution,
  expression: MathLabelsSchema.shape.expression,
});

/** GSM8K split, read synchronously once. */
function gsm8k(split: "train" | "test"): MathProblem[] {
  return loadJsonlSync(GSM8K_PATHS[split], Gsm8kRowSchema).map((row, i) => {
    const final = row.answer.slice(row.answer.lastIndexOf("####") + 4).trim();
    const answer = parseNumber(final);
    if (answer === null)
      throw new Error(`${GSM8K_PATHS[split]}: row ${i + 1}: field answer: "${final}" is not a number`);
    return { id: `gsm8k/${split}/${i}`, question: row.question, solution: row.answer, answer };
  });
}

/**
 * The reasoner's demonstration: the reference solution; from the second turn on, when the teammate's
 * program printed the right answer, a check that agrees with it (the demonstrator trusts a tool
 * that is right, and only then).
 */
function reasonerDemo(p: MathProblem, state: ReasonerToolState): string {
  const tool = state.last.tool?.answer ?? null;
  if (state.turn > 0 && p.answer !== undefined && answersMatch(tool, p.answer))
    return `The program printed ${tool}.\n\\boxed{${tool}}`;
  if ("expression" in p) return p.solution; // generated: already `left=value` lines and the box
  const steps = p.solution
    .slice(0, p.solution.lastIndexOf("####"))
    .replace(/<<[^>]*>>/g, "")
    .trim();
  return `${steps}\nThe answer is \\boxed{${p.answer}}.`;
}

function renderMath(state: unknown): MathAnswer {
  const s = state as ReasonerToolState;
  const t = s.last.tool;
  return {
    kind: "math",
    answer: s.teamAnswer,
    agree: s.agree,
    reasoner: s.last.reasoner?.answer ?? null,
    tool: t
      ? {
          answer: t.answer,
          program: t.program ?? "",
          output: t.output ?? "",
          status: t.runStatus ?? "no-code",
          ...(t.error !== undefined ? { error: t.error } : {}),
        }
      : null,
    turns: s.turn,
  };
}

export const mathEntry = defineEnvironment({
  description: "GSM8K word problems: a reasoner and a Python tool agent (run in the sandbox) must agree",
  options: MathOptionsSchema,
  payload: { inputs: MathInputsSchema, labels: MathLabelsSchema },
  needsSandbox: (options) => options.roles === "team",
  build(options, runner: CodeRunner | undefined) {
    if (runner === undefined && options.roles === "team")
      throw new Error("math: runs the tool agent's code and needs a sandbox runner");
    const { problems, roles, ...envOptions } = options;
    const env = reasonerToolEnv({ runner, ...envOptions, single: roles === "single" });
    return {
      env: checkedEnvironment("math", env, MathProblemSchema as z.ZodType<MathProblem>),
      generateTasks:
        problems === "arithmetic"
          ? arithmeticTasks
          : datasetTasks(
              "math-gsm8k",
              () => ({ train: gsm8k("train"), test: gsm8k("test") }),
              (p: MathProblem) => p.id,
            ),
      team: (specialisation) =>
        textTeam(
          roles === "single" ? "math-reasoner" : "math-reasoner-tool",
          env.agents,
          specialisation,
          "parallel",
          options.maxTurns,
        ),
      demo: (task, state, agent) => {
        const p = task.payload as MathProblem;
        if (agent === "reasoner") return reasonerDemo(p, state as ReasonerToolState);
        if (!("expression" in p)) return arithmeticProgram(String(p.answer));
        const { expression } = p as ArithmeticProblem;
        return arithmeticProgram(
          options.toolInputs === "numbers" ? indexedExpression(expression, p.question) : expression,
        );
      },
    };
  },
  render: (state) => renderMath(state),
});
