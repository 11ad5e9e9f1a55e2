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
import type { MathProblem } from "./dataset.ts";

/** One step of the worked solution: `left=value`. */
interface Step {
  readonly left: string;
  readonly value: number;
}

/** A template's draw: the question, the tool's Python expression and the worked steps. */
interface Drawn {
  readonly question: string;
  readonly expression: string;
  readonly steps: readonly [Step, Step];
  readonly numbers: readonly number[];
}

interface ArithmeticTemplate {
  readonly name: string;
  draw(rng: Rng): Drawn;
}

/** A uniform integer in [lo, hi]. */
function between(rng: Rng, lo: number, hi: number): number {
  return lo + rng.int(hi - lo + 1);
}

/** `a op b` then `(result) op2 c`: the two steps of a left-to-right expression. */
function twoSteps(a: number, op1: string, b: number, op2: string, c: number): Drawn["steps"] {
  const first = apply(a, op1, b);
  return [
    { left: `${a}${shown(op1)}${b}`, value: first },
    { left: `${first}${shown(op2)}${c}`, value: apply(first, op2, c) },
  ];
}

/** An operation as the worked solution writes it (exact division as `/`). */
function shown(op: string): string {
  return op === "//" ? "/" : op;
}

function apply(a: number, op: string, b: number): number {
  switch (op) {
    case "+":
      return a + b;
    case "-":
      return a - b;
    case "*":
      return a * b;
    case "//":
      return Math.floor(a / b);
    default:
      throw new Error(`arithmetic: unknown operation ${op}`);
  }
}

/**
 * The templates. Subtractions never go below zero and divisions are exact, so every answer is a
 * non-negative integer; the expression is what a Python program prints (integer division `//`).
 */
export const ARITHMETIC_TEMPLATES: readonly ArithmeticTemplate[] = [
  {
    name: "add-sub",
    draw(rng) {
      const a = between(rng, 100, 999);
      const b = between(rng, 10, 99);
      const c = between(rng, 10, a);
      return {
        question: `Ann has ${a} apples. She buys ${b} more and gives away ${c}. How many apples does she have?`,
        expression: `${a}+${b}-${c}`,
        steps: twoSteps(a, "+", b, "-", c),
        numbers: [a, b, c],
      };
    },
  },
  {
    name: "sub-add",
    draw(rng) {
      const a = between(rng, 100, 999);
      const b = between(rng, 10, a - 1);
      const c = between(rng, 10, 99);
      return {
        question: `A bus has ${a} people. At a stop ${b} get off and ${c} get on. How many people are on the bus?`,
        expression: `${a}-${b}+${c}`,
        steps: twoSteps(a, "-", b, "+", c),
        numbers: [a, b, c],
      };
    },
  },
  {
    name: "mul-add",
    draw(rng) {
      const a = between(rng, 11, 99);
      const b = between(rng, 11, 99);
      const c = between(rng, 10, 99);
      return {
        question: `A box holds ${a} pens. Tom fills ${b} boxes and has ${c} loose pens. How many pens does he have?`,
        expression: `${a}*${b}+${c}`,
        steps: twoSteps(a, "*", b, "+", c),
        numbers: [a, b, c],
      };
    },
  },
  {
    name: "mul-sub",
    draw(rng) {
      const a = between(rng, 11, 99);
      const b = between(rng, 11, 99);
      const c = between(rng, 10, Math.min(999, a * b));
      return {
        question: `A farm has ${a} rows of ${b} trees. A storm breaks ${c} trees. How many trees are left?`,
        expression: `${a}*${b}-${c}`,
        steps: twoSteps(a, "*", b, "-", c),
        numbers: [a, b, c],
      };
    },
  },
  {
    name: "div-sub",
    draw(rng) {
      const b = between(rng, 11, 40);
      const each = between(rng, 20, 99);
      const a = b * each;
      const c = between(rng, 10, each);
      return {
        question: `${a} cookies are shared equally by ${b} kids. Each kid eats ${c}. How many cookies does each kid have left?`,
        expression: `${a}//${b}-${c}`,
        steps: twoSteps(a, "//", b, "-", c),
        numbers: [a, b, c],
      };
    },
  },
  {
    name: "div-add",
    draw(rng) {
      const b = between(rng, 11, 40);
      const each = between(rng, 10, 99);
      const a = b * each;
      const c = between(rng, 10, 99);
      return {
        question: `${a} pages are split into ${b} equal parts. Then ${c} pages are added to each part. How many pages are in each part?`,
        expression: `${a}//${b}+${c}`,
        steps: twoSteps(a, "//", b, "+", c),
        numbers: [a, b, c],
      };
    },
  },
  {
    name: "add-mul",
    draw(rng) {
      const a = between(rng, 10, 99);
      const b = between(rng, 10, 99);
      const c = between(rng, 11, 99);
      const sum = a + b;
      return {
        question: `Mia buys ${a} red boxes and ${b} blue boxes. Each box holds ${c} beads. How many beads does she have?`,
        expression: `(${a}+${b})*${c}`,
        steps: [
          { left: `${a}+${b}`, value: sum },
          { left: `${sum}*${c}`, value: sum * c },
        ],
        numbers: [a, b, c],
      };
    },
  },
  {
    name: "sub-mul",
    draw(rng) {
      const a = between(rng, 100, 999);
      const b = between(rng, 10, a - 10);
      const c = between(rng, 11, 99);
      const left = a - b;
      return {
        question: `A club had ${a} balls and lost ${b}. Each ball costs ${c} dollars. What are the balls left worth in dollars?`,
        expression: `(${a}-${b})*${c}`,
        steps: [
          { left: `${a}-${b}`, value: left },
          { left: `${left}*${c}`, value: left * c },
        ],
        numbers: [a, b, c],
      };
    },
  },
];

/** The reasoner's worked solution: one `left=value` line per operation, then the boxed answer. */
export function arithmeticSolution(steps: readonly Step[]): string {
  const answer = steps.at(-1)!.value;
  return `${steps.map((s) => `${s.left}=${s.value}`).join("\n")}\n\\boxed{${answer}}`;
}

/** The tool agent's program: print the expression. */
export function arithmeticProgram(expression: string): string {
  return `\`\`\`python\nprint(${expression})\n\`\`\``;
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
      const drawn = template.draw(rng);
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
