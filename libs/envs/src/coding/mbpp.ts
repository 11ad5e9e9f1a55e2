/**
 * MBPP and CoopHumanEval as `CodingProblem`s, so every coding team reads one problem shape.
 *
 * MBPP rows are a task text, a reference program and `assert f(...) == ...` lines. The problem's
 * prompt is the reference's signature with the text and the first assert as its docstring (the
 * usual HumanEval-style rendering of MBPP); the hidden tests become a `check(candidate)` module
 * whose asserts call `candidate`, with the row's setup code first. The canonical solution ends the
 * stub and then defines the reference, so `prompt + canonicalSolution` is a correct program.
 *
 * `mbppProblems` leaves out the tasks no solution can pass through the reward and runs one
 * reference that is too slow for it on faster code (`MBPP_DROPPED`, `MBPP_REFERENCE_REPAIRS`).
 *
 * CoopHumanEval rows have the HumanEval fields but no reference solution (`canonicalSolution` is
 * empty): it is an evaluation set for the helper + main team.
 */
import { join } from "node:path";
import { z } from "zod";
import { CODING_MAX_CODE_CHARS, CODING_MAX_PROMPT_CHARS, type CodingProblem } from "./dataset.ts";
import { DATA_DIR, loadJsonlSync } from "./load.ts";

export const MBPP_PATH = join(DATA_DIR, "mbpp", "mbpp.jsonl.gz");
export const COOP_HUMANEVAL_PATH = join(DATA_DIR, "coophumaneval", "test.jsonl.gz");

export const MbppRowSchema = z.object({
  task_id: z.number().int(),
  text: z.string().min(1).max(CODING_MAX_PROMPT_CHARS),
  code: z.string().min(1).max(CODING_MAX_CODE_CHARS),
  test_setup_code: z.string(),
  test_list: z.array(z.string().min(1)).min(1),
});
export type MbppRow = z.infer<typeof MbppRowSchema>;

/** The function under test: the first function the code defines that the first assert calls. */
export function mbppEntryPoint(code: string, firstAssert: string): string {
  const defined = [...code.matchAll(/^def\s+([A-Za-z_]\w*)\s*\(/gm)].map((m) => m[1]!);
  const called = defined.find((name) => new RegExp(`\\b${name}\\s*\\(`).test(firstAssert));
  const name = called ?? defined[0];
  if (name === undefined)
    throw new Error(`mbpp: no function defined in ${JSON.stringify(code.slice(0, 80))}`);
  return name;
}

export function mbppProblem(row: MbppRow): CodingProblem {
  const code = row.code.replace(/\r\n/g, "\n").replace(/\t/g, "    ");
  const entryPoint = mbppEntryPoint(code, row.test_list[0]!);
  const signature = new RegExp(`^def\\s+${entryPoint}\\s*\\(.*\\)\\s*:`, "m").exec(code)?.[0];
  if (signature === undefined)
    throw new Error(`mbpp/${row.task_id}: no one-line signature for ${entryPoint}`);
  const doc = `${row.text}\n    >>> ${row.test_list[0]!.replace(/^assert\s+/, "")}`.replace(/"""/g, "'''");
  const prompt = `${signature.replace(/\s*:$/, ":")}\n    """${doc}\n    """\n`;
  const call = new RegExp(`\\b${entryPoint}\\s*\\(`, "g");
  const body = [row.test_setup_code.replace(/\r\n/g, "\n"), ...row.test_list]
    .flatMap((t) => t.split("\n"))
    .filter((line) => line.trim() !== "")
    .map((line) => `    ${line.replace(call, "candidate(")}`);
  return {
    taskId: `mbpp/${row.task_id}`,
    prompt,
    canonicalSolution: `    pass\n\n${code}\n`,
    test: `def check(candidate):\n${body.join("\n")}\n`,
    entryPoint,
  };
}

/**
 * Tasks left out, and why (`data/mbpp/SOURCE.md` lists them). Their tests build instances of
 * classes the reference defines, or pass a type: neither is plain data, so it cannot cross between
 * the checker and the program, and no solution passes any of their asserts.
 */
export const MBPP_DROPPED: Readonly<Record<number, string>> = {
  367: "the test setup builds a tree of the reference's Node objects",
  533: "the asserts pass a type (int, str, float) as an argument",
  601: "the asserts build the reference's Pair objects",
  927: "the test setup builds a tree of the reference's Node objects",
};

/**
 * References replaced by equivalent faster code. 123's tries every divisor of every number up to
 * 9,999 (5 s for one assert, over the environments' 3 s per statement); this one stops at the
 * square root, and returns the same as the original for every input (checked for -3..1499 and
 * non-integers when it was written).
 */
export const MBPP_REFERENCE_REPAIRS: Readonly<Record<number, string>> = {
  123: `def amicable_numbers_sum(limit):
    if not isinstance(limit, int):
        return "Input is not an integer!"
    if limit < 1:
        return "Input must be bigger than 0!"
    def divisor_sum(n):
        total = 1 if n > 1 else 0
        i = 2
        while i * i <= n:
            if n % i == 0:
                total += i if i * i == n else i + n // i
            i += 1
        return total
    amicables = set()
    for num in range(2, limit+1):
        partner = divisor_sum(num)
        if partner != num and divisor_sum(partner) == num:
            amicables.add(num)
    return sum(amicables)`,
};

/** MBPP's 974 problems less `MBPP_DROPPED` (970), with `MBPP_REFERENCE_REPAIRS`, in task_id order. */
export function mbppProblems(): CodingProblem[] {
  return loadJsonlSync(MBPP_PATH, MbppRowSchema, "task_id")
    .filter((row) => MBPP_DROPPED[row.task_id] === undefined)
    .map((row) => mbppProblem({ ...row, code: MBPP_REFERENCE_REPAIRS[row.task_id] ?? row.code }));
}

const CoopRowSchema = z.object({
  task_id: z.string().min(1).max(200),
  prompt: z.string().min(1).max(CODING_MAX_PROMPT_CHARS),
  test: z.string().min(1).max(CODING_MAX_CODE_CHARS),
  entry_point: z.string().regex(/^[A-Za-z_]\w*$/, "must be a Python identifier"),
});

/** The 82 CoopHumanEval problems (no reference solutions). */
export function coopHumanEvalProblems(): CodingProblem[] {
  return loadJsonlSync(COOP_HUMANEVAL_PATH, CoopRowSchema, "task_id").map((r) => ({
    taskId: r.task_id,
    prompt: r.prompt,
    canonicalSolution: "",
    test: r.test,
    entryPoint: r.entry_point,
  }));
}
