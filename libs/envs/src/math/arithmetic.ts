/**
 * Arithmetic word problems generated from a seed: the `math` environment at a scale a tiny
 * from-scratch model can learn (`problems: arithmetic`). Each problem is one of eight templates of
 * two operations on two- and three-digit numbers with an exact integer answer, e.g.
 *
 *   A box holds 37 pens. Tom fills 24 boxes and has 15 loose pens. How many pens does he have?
 *   reasoner: 37*24=888 / 888+15=903 / \boxed{903}        tool: print(37*24+15)
 *
 * The tool agent's work is a copy: the template's wording names the expression, the numbers come
 * from the question, and the sandbox does the arithmetic. The reasoner's is arithmetic on numbers
 * of up to four digits, done by the model itself — what a model of half a million parameters
 * cannot learn in minutes. That is the AT-GRPO paper's picture of the math team (the tool agent
 * is what the team gains) at toy scale.
 *
 * Splits as the games': the split key is the problem itself (template and numbers), its hash
 * decides train, validation or test, so no held-out problem is ever trained on.
 */
import type { Rng, Split, Task } from "@troupe/core";
import { generateSplitTasks } from "../games/splits.ts";
import { questionNumbers } from "./answer.ts";
import type { MathProblem } from "./dataset.ts";

/** One step of the worked solution: `left=value`. */
interface Step {
  readonly left: string;
  readonly value: number;
}

type Operation = "+" | "-" | "*" | "//";

/**
 * A template: `(a op1 b) op2 c` in words. `numbers` draws a, b, c so that no subtraction goes
 * below zero and every division is exact.
 */
interface ArithmeticTemplate {
  readonly name: string;
  readonly ops: readonly [Operation, Operation];
  numbers(rng: Rng): readonly [number, number, number];
  question(a: number, b: number, c: number): string;
}

/** A uniform integer in [lo, hi]. */
function between(rng: Rng, lo: number, hi: number): number {
  return lo + rng.int(hi - lo + 1);
}

function apply(a: number, op: Operation, b: number): number {
  switch (op) {
    case "+":
      return a + b;
    case "-":
      return a - b;
    case "*":
      return a * b;
    case "//":
      return Math.floor(a / b);
  }
}

/** An operation as the worked solution writes it (exact division as `/`). */
function shown(op: Operation): string {
  return op === "//" ? "/" : op;
}

/** `a / b` drawn as an exact division: b, then the quotient, a = b · quotient. */
function exactDivision(rng: Rng, quotientLow: number): { a: number; b: number; quotient: number } {
  const b = between(rng, 11, 40);
  const quotient = between(rng, quotientLow, 99);
  return { a: b * quotient, b, quotient };
}

export const ARITHMETIC_TEMPLATES: readonly ArithmeticTemplate[] = [
  {
    name: "add-sub",
    ops: ["+", "-"],
    numbers(rng) {
      const a = between(rng, 100, 999);
      const b = between(rng, 10, 99);
      return [a, b, between(rng, 10, a)];
    },
    question: (a, b, c) =>
      `Ann has ${a} apples. She buys ${b} more and gives away ${c}. How many apples does she have?`,
  },
  {
    name: "sub-add",
    ops: ["-", "+"],
    numbers(rng) {
      const a = between(rng, 100, 999);
      return [a, between(rng, 10, a - 1), between(rng, 10, 99)];
    },
    question: (a, b, c) =>
      `A bus has ${a} people. At a stop ${b} get off and ${c} get on. How many people are on the bus?`,
  },
  {
    name: "mul-add",
    ops: ["*", "+"],
    numbers: (rng) => [between(rng, 11, 99), between(rng, 11, 99), between(rng, 10, 99)],
    question: (a, b, c) =>
      `A box holds ${a} pens. Tom fills ${b} boxes and has ${c} loose pens. How many pens does he have?`,
  },
  {
    name: "mul-sub",
    ops: ["*", "-"],
    numbers(rng) {
      const a = between(rng, 11, 99);
      const b = between(rng, 11, 99);
      return [a, b, between(rng, 10, Math.min(999, a * b))];
    },
    question: (a, b, c) =>
      `A farm has ${a} rows of ${b} trees. A storm breaks ${c} trees. How many trees are left?`,
  },
  {
    name: "div-sub",
    ops: ["//", "-"],
    numbers(rng) {
      const { a, b, quotient } = exactDivision(rng, 20);
      return [a, b, between(rng, 10, quotient)];
    },
    question: (a, b, c) =>
      `${a} cookies are shared equally by ${b} kids. Each kid eats ${c}. How many cookies does each kid have left?`,
  },
  {
    name: "div-add",
    ops: ["//", "+"],
    numbers(rng) {
      const { a, b } = exactDivision(rng, 10);
      return [a, b, between(rng, 10, 99)];
    },
    question: (a, b, c) =>
      `${a} pages are split into ${b} equal parts. Then ${c} pages are added to each part. How many pages are in each part?`,
  },
  {
    name: "add-mul",
    ops: ["+", "*"],
    numbers: (rng) => [between(rng, 10, 99), between(rng, 10, 99), between(rng, 11, 99)],
    question: (a, b, c) =>
      `Mia buys ${a} red boxes and ${b} blue boxes. Each box holds ${c} beads. How many beads does she have?`,
  },
  {
    name: "sub-mul",
    ops: ["-", "*"],
    numbers(rng) {
      const a = between(rng, 100, 999);
      return [a, between(rng, 10, a - 10), between(rng, 11, 99)];
    },
    question: (a, b, c) =>
      `A club had ${a} balls and lost ${b}. Each ball costs ${c} dollars. What are the balls left worth in dollars?`,
  },
];

/** A template's draw: the question, the tool's Python expression and the two worked steps. */
export interface DrawnProblem {
  readonly question: string;
  readonly expression: string;
  readonly steps: readonly [Step, Step];
  readonly numbers: readonly [number, number, number];
}

/** One problem of a template: `(a op1 b) op2 c`, the brackets written only where Python needs them. */
export function drawProblem(template: ArithmeticTemplate, rng: Rng): DrawnProblem {
  const numbers = template.numbers(rng);
  const [a, b, c] = numbers;
  const [op1, op2] = template.ops;
  const first = apply(a, op1, b);
  const grouped = (op1 === "+" || op1 === "-") && (op2 === "*" || op2 === "//");
  const left = grouped ? `(${a}${op1}${b})` : `${a}${op1}${b}`;
  return {
    question: template.question(a, b, c),
    expression: `${left}${op2}${c}`,
    steps: [
      { left: `${a}${shown(op1)}${b}`, value: first },
      { left: `${first}${shown(op2)}${c}`, value: apply(first, op2, c) },
    ],
    numbers,
  };
}

/** The reasoner's worked solution: one `left=value` line per operation, then the boxed answer. */
export function arithmeticSolution(steps: readonly Step[]): string {
  const answer = steps.at(-1)!.value;
  return `${steps.map((s) => `${s.left}=${s.value}`).join("\n")}\n\\boxed{${answer}}`;
}

/** The tool agent's program: print the expression. */
export function arithmeticProgram(expression: string): string {
  return `\`\`\`python\nprint(${expression})\n\`\`\``;
}

/**
 * The expression over `N` (toolInputs `numbers`): its i-th number becomes `N[i]` when its numbers
 * are the question's, in order (every template's are); otherwise it is left as it is.
 */
export function indexedExpression(expression: string, question: string): string {
  const given = questionNumbers(question);
  const used = [...expression.matchAll(/\d+/g)].map((m) => Number(m[0]));
  if (used.length !== given.length || used.some((n, i) => n !== given[i])) return expression;
  let i = 0;
  return expression.replace(/\d+/g, () => `N[${i++}]`);
}

/** A generated problem: GSM8K's fields plus the template's expression (what the tool's demonstration prints). */
export interface ArithmeticProblem extends MathProblem {
  readonly expression: string;
}

const ENV = "math-arithmetic";

/**
 * `count` distinct problems of a split, the same for the same (split, seed). Templates are drawn
 * uniformly; the split is decided by the hash of (template, numbers).
 */
export function arithmeticTasks(split: Split, count: number, seed: number): Task<ArithmeticProblem>[] {
  return generateSplitTasks<ArithmeticProblem>({
    env: ENV,
    split,
    count,
    seed,
    fractions: { test: 0.1, validation: 0.1 },
    candidate(rng) {
      const template = rng.pick(ARITHMETIC_TEMPLATES);
      const drawn = drawProblem(template, rng);
      const key = [template.name, ...drawn.numbers];
      const answer = drawn.steps[1].value;
      return {
        payload: {
          id: `${template.name}:${drawn.numbers.join(",")}`,
          question: drawn.question,
          solution: arithmeticSolution(drawn.steps),
          answer,
          expression: drawn.expression,
        },
        instanceKey: key,
        splitKey: key,
      };
    },
  });
}
