/**
 * HumanEval-format coding problems (task_id, prompt, canonical_solution, test, entry_point), as
 * in openai/human-eval. The shipped copy is `libs/envs/data/humaneval/HumanEval.jsonl.gz`
 * (MIT, see the LICENSE next to it); the loaders repair one broken test (`HUMANEVAL_TEST_REPAIRS`).
 */

import { join } from "node:path";
import type { Split, Task } from "@troupe/core";
import { z } from "zod";
import { DATA_DIR, type DataSource, loadJsonl, loadJsonlSync } from "./load.ts";
import { splitByHash } from "./split.ts";

/**
 * The largest coding problem a dataset may hold, in characters: the prompt every agent sees, and
 * the solution and hidden tests the checker runs (HumanEval's largest are 1,360, 864 and 1,804).
 */
export const CODING_MAX_PROMPT_CHARS = 16_384;
export const CODING_MAX_CODE_CHARS = 65_536;

export const HumanEvalRowSchema = z.object({
  task_id: z.string().min(1).max(200),
  prompt: z.string().min(1).max(CODING_MAX_PROMPT_CHARS),
  canonical_solution: z.string().max(CODING_MAX_CODE_CHARS),
  test: z.string().min(1).max(CODING_MAX_CODE_CHARS),
  entry_point: z.string().regex(/^[A-Za-z_]\w*$/, "must be a Python identifier"),
});
export type HumanEvalRow = z.infer<typeof HumanEvalRowSchema>;

/** The payload of a coding task. */
export interface CodingProblem {
  readonly taskId: string;
  /** Signature and docstring of the function to write (plus any helpers and imports). */
  readonly prompt: string;
  /** Body completing `prompt`; `prompt + canonicalSolution` is a correct program. */
  readonly canonicalSolution: string;
  /** The hidden tests: a module defining `check(candidate)`; "" for a served prompt without them (not judged). */
  readonly test: string;
  readonly entryPoint: string;
}

export const DEFAULT_HUMANEVAL_PATH = join(DATA_DIR, "humaneval", "HumanEval.jsonl.gz");

/**
 * Text replacements in the tests of HumanEval problems that no solution could fail or pass as
 * written (`data/humaneval/SOURCE.md` lists them). HumanEval/33 compares the candidate with
 * `sort_third` itself in 3 of its 7 asserts, and `sort_third` is the candidate: any deterministic
 * function passes them. They now compare with the canonical solution's values, written out.
 * A row without the broken text (another copy, already fixed) is left as it is.
 */
export const HUMANEVAL_TEST_REPAIRS: Readonly<Record<string, readonly (readonly [string, string])[]>> = {
  "HumanEval/33": [
    ["tuple(sort_third([1, 2, 3]))", "tuple([1, 2, 3])"],
    [
      "tuple(sort_third([5, 3, -5, 2, -3, 3, 9, 0, 123, 1, -10]))",
      "tuple([1, 3, -5, 2, -3, 3, 5, 0, 123, 9, -10])",
    ],
    [
      "tuple(sort_third([5, 8, -12, 4, 23, 2, 3, 11, 12, -10]))",
      "tuple([-10, 8, -12, 3, 23, 2, 4, 11, 12, 5])",
    ],
  ],
};

function humanEvalProblem(row: HumanEvalRow): CodingProblem {
  let test = row.test;
  for (const [broken, fixed] of HUMANEVAL_TEST_REPAIRS[row.task_id] ?? []) test = test.replace(broken, fixed);
  return {
    taskId: row.task_id,
    prompt: row.prompt,
    canonicalSolution: row.canonical_solution,
    test,
    entryPoint: row.entry_point,
  };
}

/** Loads and validates HumanEval rows (JSONL or JSONL.gz, path or URL). Defaults to the shipped copy. */
export async function loadHumanEval(source: DataSource = DEFAULT_HUMANEVAL_PATH): Promise<CodingProblem[]> {
  const rows = await loadJsonl(source, HumanEvalRowSchema, "task_id");
  const seen = new Set<string>();
  return rows.map((row, i) => {
    if (seen.has(row.task_id))
      throw new Error(`${String(source)}: row ${i + 1}: duplicate task_id "${row.task_id}"`);
    seen.add(row.task_id);
    return humanEvalProblem(row);
  });
}

/** The shipped HumanEval, read synchronously (once per process), for the registry. */
export function humanEvalProblems(): CodingProblem[] {
  return loadJsonlSync(DEFAULT_HUMANEVAL_PATH, HumanEvalRowSchema, "task_id").map(humanEvalProblem);
}

export interface CodingSplitOptions {
  /** Fraction of problems in the test split, chosen by hash of the prompt. HumanEval has one split. */
  readonly testFraction: number;
  readonly salt: string;
}

export const defaultCodingSplit: CodingSplitOptions = { testFraction: 0.5, salt: "humaneval" };

/** The problem text that identifies a problem for split purposes. */
export function codingProblemKey(problem: CodingProblem): string {
  return problem.prompt;
}

/** Train and test tasks, disjoint by a hash of the prompt. */
export function codingTasks(
  problems: readonly CodingProblem[],
  options: Partial<CodingSplitOptions> = {},
): Record<Extract<Split, "train" | "test">, Task<CodingProblem>[]> {
  const { testFraction, salt } = { ...defaultCodingSplit, ...options };
  const { train, test } = splitByHash(problems, codingProblemKey, testFraction, salt);
  const toTask =
    (split: Split) =>
    (p: CodingProblem): Task<CodingProblem> => ({ id: p.taskId, split, payload: p });
  return { train: train.map(toTask("train")), test: test.map(toTask("test")) };
}
