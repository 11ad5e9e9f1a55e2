/**
 * The `toy` split of the `coding` environment: two-step Python functions from templates, small
 * enough for a byte-level model trained from scratch on the CPU to write, with a helper's and a
 * main function's share of the work plain to see.
 *
 *   def f(xs):
 *       """keep x>3, then sum"""
 *
 * Every task is `f(v) = B(A(v))` for two steps A then B over one input kind:
 *
 * | input      | step A (and B)                                                            | B only          |
 * |------------|---------------------------------------------------------------------------|-----------------|
 * | `xs` list  | keep x>k, keep x<k, keep even, keep odd, add k, times k, first n, drop n, reverse, sort | sum, count |
 * | `s` string | upper, reverse, first n, drop n, a to b (replace), append c, double         | count c, length |
 * | `n` int    | add k, times k, mod k, div k                                               |                 |
 *
 * Each task carries its reference solution in three forms: the whole function (what one agent,
 * or the coder, writes), and the helper's `aux` (step A) with main's `f` calling it (step B):
 *
 *   whole  def f(xs):\n    return sum([x for x in xs if x>3])
 *   aux    def aux(xs):\n    return [x for x in xs if x>3]
 *   main   def f(xs):\n    return sum(aux(xs))
 *
 * The space of tasks is every pair (A, B) with every parameter (about 3,000 after the filter
 * below). Hidden tests: four asserts on inputs drawn from a stream seeded by the task itself, the
 * expected values computed here by the same steps in TypeScript (`toy-tasks.test.ts` runs every
 * reference against its asserts in Python). A pair is kept only if some draw of inputs (at most
 * `TEST_DRAWS`) shows both steps at work: on some input B(A(v)) ≠ B(v) (A matters) and
 * B(A(v)) ≠ A(v) (B matters), A's results are not all equal (aux does work), B(A(v)) is not B of
 * a blank on every input (aux's result reaches main's answer: the strict reward's counterfactual),
 * and the answers are not all equal (no constant passes). Pairs that no draw separates
 * (`sort` then `reverse` then … , `reverse` then `sort`) are left out.
 *
 * Split: by the hash of the task (its steps and parameters), test if u < `TOY_TEST_FRACTION`, so
 * train and test never share a task whatever the seed; both lists in a fixed shuffle.
 */
import { deriveSeed, Rng, stableHash } from "@troupe/core";
import type { CodingProblem } from "./dataset.ts";
import { hashUnit } from "./split.ts";

/** A Python value the toy functions take or return. */
export type ToyValue = number | string | readonly number[];

type Kind = "list" | "str" | "int";
/** Python operator precedence of an expression's top level: 3 atom (name, call, subscript, display), 2 `*`, 1 `+`. */
type Prec = 1 | 2 | 3;

interface Expr {
  readonly code: string;
  readonly prec: Prec;
}

interface Step {
  /** Identity with parameters, e.g. `gt3`. */
  readonly id: string;
  /** The docstring's words. */
  readonly doc: string;
  readonly from: Kind;
  readonly to: Kind;
  /** Python source of the step applied to `e`. */
  code(e: Expr): Expr;
  /** The same step in TypeScript (Python's semantics on the inputs drawn here: non-negative ints, lowercase strings). */
  run(v: ToyValue): ToyValue;
}

/** A toy problem: the coding payload plus the reference in the forms the roles write (the warm start's demonstrations). */
export interface ToyProblem extends CodingProblem {
  readonly toy: {
    /** `def f(v):\n    return B(A(v))`: one agent's (or the coder's) whole function. */
    readonly whole: string;
    /** The helper's `aux` (step A). */
    readonly aux: string;
    /** Main's `f`, calling `aux` (step B). */
    readonly main: string;
    /** The two shortest of the hidden asserts, written as a model would: the tester's demonstration. */
    readonly asserts: string;
    /** The steps, e.g. ["gt3", "sum"]. */
    readonly steps: readonly [string, string];
  };
}

export const TOY_TEST_FRACTION = 0.2;
const TOY_SALT = "coding-toy";
/** Hidden asserts per task. */
export const TOY_TESTS = 4;
/** Input draws tried per pair before leaving it out. */
const TEST_DRAWS = 40;
const LETTERS = "abcde";

const ARG: Record<Kind, string> = { list: "xs", str: "s", int: "n" };

const atom = (code: string): Expr => ({ code, prec: 3 });
/** `e` as the receiver of a subscript or method call, or an operand of `*` (prec ≥ min). */
const wrap = (e: Expr, min: Prec) => (e.prec >= min ? e.code : `(${e.code})`);

const asList = (v: ToyValue) => v as readonly number[];
const asStr = (v: ToyValue) => v as string;
const asInt = (v: ToyValue) => v as number;

function listSteps(): Step[] {
  const steps: Step[] = [];
  const filter = (id: string, doc: string, cond: string, test: (x: number) => boolean) =>
    steps.push({
      id,
      doc,
      from: "list",
      to: "list",
      code: (e) => atom(`[x for x in ${e.code} if ${cond}]`),
      run: (v) => asList(v).filter(test),
    });
  for (let k = 1; k <= 8; k++) filter(`gt${k}`, `keep x>${k}`, `x>${k}`, (x) => x > k);
  for (let k = 2; k <= 9; k++) filter(`lt${k}`, `keep x<${k}`, `x<${k}`, (x) => x < k);
  filter("even", "keep even", "x%2==0", (x) => x % 2 === 0);
  filter("odd", "keep odd", "x%2==1", (x) => x % 2 === 1);
  for (let k = 1; k <= 9; k++)
    steps.push({
      id: `add${k}`,
      doc: `add ${k}`,
      from: "list",
      to: "list",
      code: (e) => atom(`[x+${k} for x in ${e.code}]`),
      run: (v) => asList(v).map((x) => x + k),
    });
  for (let k = 2; k <= 9; k++)
    steps.push({
      id: `mul${k}`,
      doc: `times ${k}`,
      from: "list",
      to: "list",
      code: (e) => atom(`[x*${k} for x in ${e.code}]`),
      run: (v) => asList(v).map((x) => x * k),
    });
  for (let n = 1; n <= 3; n++) {
    steps.push({
      id: `first${n}`,
      doc: `first ${n}`,
      from: "list",
      to: "list",
      code: (e) => atom(`${wrap(e, 3)}[:${n}]`),
      run: (v) => asList(v).slice(0, n),
    });
    steps.push({
      id: `drop${n}`,
      doc: `drop ${n}`,
      from: "list",
      to: "list",
      code: (e) => atom(`${wrap(e, 3)}[${n}:]`),
      run: (v) => asList(v).slice(n),
    });
  }
  steps.push({
    id: "rev",
    doc: "reverse",
    from: "list",
    to: "list",
    code: (e) => atom(`${wrap(e, 3)}[::-1]`),
    run: (v) => [...asList(v)].reverse(),
  });
  steps.push({
    id: "sort",
    doc: "sort",
    from: "list",
    to: "list",
    code: (e) => atom(`sorted(${e.code})`),
    run: (v) => [...asList(v)].sort((a, b) => a - b),
  });
  steps.push({
    id: "sum",
    doc: "sum",
    from: "list",
    to: "int",
    code: (e) => atom(`sum(${e.code})`),
    run: (v) => asList(v).reduce((a, b) => a + b, 0),
  });
  steps.push({
    id: "len",
    doc: "count",
    from: "list",
    to: "int",
    code: (e) => atom(`len(${e.code})`),
    run: (v) => asList(v).length,
  });
  return steps;
}

function stringSteps(): Step[] {
  const steps: Step[] = [];
  const str = (id: string, doc: string, code: Step["code"], run: (s: string) => string) =>
    steps.push({ id, doc, from: "str", to: "str", code, run: (v) => run(asStr(v)) });
  str(
    "upper",
    "upper",
    (e) => atom(`${wrap(e, 3)}.upper()`),
    (s) => s.toUpperCase(),
  );
  str(
    "rev",
    "reverse",
    (e) => atom(`${wrap(e, 3)}[::-1]`),
    (s) => [...s].reverse().join(""),
  );
  for (let n = 1; n <= 3; n++) {
    str(
      `first${n}`,
      `first ${n}`,
      (e) => atom(`${wrap(e, 3)}[:${n}]`),
      (s) => s.slice(0, n),
    );
    str(
      `drop${n}`,
      `drop ${n}`,
      (e) => atom(`${wrap(e, 3)}[${n}:]`),
      (s) => s.slice(n),
    );
  }
  for (const a of LETTERS.slice(0, 4))
    for (const b of LETTERS.slice(0, 4))
      if (a !== b)
        str(
          `rep${a}${b}`,
          `${a} to ${b}`,
          (e) => atom(`${wrap(e, 3)}.replace('${a}','${b}')`),
          (s) => s.replaceAll(a, b),
        );
  for (const c of LETTERS)
    str(
      `app${c}`,
      `append ${c}`,
      (e) => ({ code: `${e.code}+'${c}'`, prec: 1 }),
      (s) => s + c,
    );
  str(
    "dbl",
    "double",
    (e) => ({ code: `${wrap(e, 2)}*2`, prec: 2 }),
    (s) => s + s,
  );
  for (const c of LETTERS)
    steps.push({
      id: `count${c}`,
      doc: `count ${c}`,
      from: "str",
      to: "int",
      code: (e) => atom(`${wrap(e, 3)}.count('${c}')`),
      run: (v) => [...asStr(v)].filter((x) => x === c).length,
    });
  steps.push({
    id: "len",
    doc: "length",
    from: "str",
    to: "int",
    code: (e) => atom(`len(${e.code})`),
    run: (v) => asStr(v).length,
  });
  return steps;
}

function intSteps(): Step[] {
  const steps: Step[] = [];
  const int = (id: string, doc: string, code: Step["code"], run: (n: number) => number) =>
    steps.push({ id, doc, from: "int", to: "int", code, run: (v) => run(asInt(v)) });
  for (let k = 1; k <= 9; k++)
    int(
      `add${k}`,
      `add ${k}`,
      (e) => ({ code: `${e.code}+${k}`, prec: 1 }),
      (n) => n + k,
    );
  for (let k = 2; k <= 9; k++) {
    int(
      `mul${k}`,
      `times ${k}`,
      (e) => ({ code: `${wrap(e, 2)}*${k}`, prec: 2 }),
      (n) => n * k,
    );
    // Python's % and // on the non-negative ints drawn here: JavaScript's % and Math.floor agree.
    int(
      `mod${k}`,
      `mod ${k}`,
      (e) => ({ code: `${wrap(e, 2)}%${k}`, prec: 2 }),
      (n) => n % k,
    );
    int(
      `div${k}`,
      `div ${k}`,
      (e) => ({ code: `${wrap(e, 2)}//${k}`, prec: 2 }),
      (n) => Math.floor(n / k),
    );
  }
  return steps;
}

/** Python source of a value (lists without spaces: the model writes fewer characters). */
export function pyRepr(v: ToyValue): string {
  if (typeof v === "number") return String(v);
  if (typeof v === "string") return `'${v}'`;
  return `[${v.join(",")}]`;
}

const same = (a: ToyValue, b: ToyValue) => pyRepr(a) === pyRepr(b);

/** The blanks the strict reward's counterfactual gives `aux` in place of its result. */
function blanks(v: ToyValue): ToyValue[] {
  if (typeof v === "number") return [0];
  if (typeof v === "string") return [""];
  return [[], v.map(() => 0)];
}

function drawInput(kind: Kind, rng: Rng): ToyValue {
  if (kind === "int") return rng.intBetween(10, 99);
  const length = rng.intBetween(3, 6);
  if (kind === "str") return Array.from({ length }, () => LETTERS[rng.int(LETTERS.length)]!).join("");
  return Array.from({ length }, () => rng.intBetween(0, 9));
}

/** Inputs on which both steps visibly work (the header's conditions), or null when no draw gives them. */
function separatingInputs(a: Step, b: Step, key: string): ToyValue[] | null {
  const rng = new Rng(deriveSeed(0, TOY_SALT, "tests", key));
  for (let draw = 0; draw < TEST_DRAWS; draw++) {
    const inputs = Array.from({ length: TOY_TESTS }, () => drawInput(a.from, rng));
    if (new Set(inputs.map(pyRepr)).size < inputs.length) continue;
    const mid = inputs.map((v) => a.run(v));
    const out = mid.map((m) => b.run(m));
    const aMatters = inputs.some((v, i) => !same(b.run(v), out[i]!));
    const bMatters = mid.some((m, i) => !same(m, out[i]!));
    const auxWorks = new Set(mid.map(pyRepr)).size > 1;
    const reachesMain = mid.some((m, i) => blanks(m).every((blank) => !same(b.run(blank), out[i]!)));
    const notConstant = new Set(out.map(pyRepr)).size > 1;
    if (aMatters && bMatters && auxWorks && reachesMain && notConstant) return inputs;
  }
  return null;
}

function toyProblem(a: Step, b: Step): ToyProblem | null {
  const kind = a.from;
  const key = `${kind}:${a.id}|${b.id}`;
  const inputs = separatingInputs(a, b, key);
  if (inputs === null) return null;
  const arg = ARG[kind];
  const whole = `def f(${arg}):\n    return ${b.code(a.code(atom(arg))).code}`;
  const aux = `def aux(${arg}):\n    return ${a.code(atom(arg)).code}`;
  const main = `def f(${arg}):\n    return ${b.code(atom(`aux(${arg})`)).code}`;
  const asserts = inputs.map((v) => `assert f(${pyRepr(v)})==${pyRepr(b.run(a.run(v)))}`);
  return {
    taskId: `Toy/${key}`,
    prompt: `def f(${arg}):\n    """${a.doc}, then ${b.doc}"""\n`,
    canonicalSolution: `    return ${b.code(a.code(atom(arg))).code}\n`,
    test: `def check(candidate):\n${inputs
      .map((v) => `    assert candidate(${pyRepr(v)}) == ${pyRepr(b.run(a.run(v)))}`)
      .join("\n")}\n`,
    entryPoint: "f",
    toy: {
      whole,
      aux,
      main,
      asserts: [...asserts]
        .sort((x, y) => x.length - y.length)
        .slice(0, 2)
        .join("\n"),
      steps: [a.id, b.id],
    },
  };
}

/** Every toy problem (both splits), in a fixed order; computed afresh (`toyProblems` caches). */
export function allToyProblems(): ToyProblem[] {
  const out: ToyProblem[] = [];
  for (const family of [listSteps(), stringSteps(), intSteps()]) {
    const first = family.filter((s) => s.from === s.to);
    for (const a of first)
      for (const b of family) {
        const p = toyProblem(a, b);
        if (p) out.push(p);
      }
  }
  return out;
}

function shuffled<T>(items: readonly T[], salt: string): T[] {
  const list = [...items];
  const rng = new Rng(deriveSeed(0, TOY_SALT, salt));
  for (let i = list.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

/** The split of a toy task: test when the hash of its steps and parameters falls below the test fraction. */
export function toySplitOf(problem: Pick<ToyProblem, "taskId">): "train" | "test" {
  return hashUnit(stableHash(problem.taskId), TOY_SALT) < TOY_TEST_FRACTION ? "test" : "train";
}

let cache: { train: ToyProblem[]; test: ToyProblem[] } | undefined;

/** The toy problems of each split (computed once per process), each in a fixed shuffle. */
export function toyProblems(): {
  readonly train: readonly ToyProblem[];
  readonly test: readonly ToyProblem[];
} {
  if (!cache) {
    const all = allToyProblems();
    cache = {
      train: shuffled(
        all.filter((p) => toySplitOf(p) === "train"),
        "train",
      ),
      test: shuffled(
        all.filter((p) => toySplitOf(p) === "test"),
        "test",
      ),
    };
  }
  return cache;
}

/** Whether a payload carries a toy problem's reference parts (the warm start's demonstrations). */
export function isToyProblem(payload: unknown): payload is ToyProblem {
  return typeof payload === "object" && payload !== null && "toy" in payload;
}
