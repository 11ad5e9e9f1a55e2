/**
 * MBPP and CoopHumanEval as `CodingProblem`s, so every coding team reads one problem shape.
 *
 * MBPP rows are a task text, a reference program and `assert f(...) == ...` lines. The problem's
 * prompt is the reference's signature with the text and the first assert as its docstring (the
 * usual HumanEval-style rendering of MBPP); the hidden tests become a `check(candidate)` module
 * whose asserts call `candidate`, with the row's setup code first. The canonical solution ends the
 * stub and then defines the reference, so `prompt + canonicalSolution` is a correct program.
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

/** All 974 MBPP problems, in task_id order. */
export function mbppProblems(): CodingProblem[] {
  return loadJsonlSync(MBPP_PATH, MbppRowSchema, "task_id").map(mbppProblem);
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
