/**
 * GSM8K-format math problems: `{question, answer}` rows whose answer ends with `#### <number>`.
 * Shipped in `libs/envs/data/gsm8k/` (MIT, see the LICENSE there): the full test split (1,319
 * problems) and the full train split (7,473), both gzipped (1.6 MB together).
 */
import { join } from "node:path";
import type { Split, Task } from "@troupe/core";
import { z } from "zod";
import { DATA_DIR, type DataSource, loadJsonl } from "../coding/load.ts";
import { parseNumber } from "./answer.ts";

/** The largest math problem a dataset may hold, in characters (GSM8K's largest: 985 and 1,228). */
export const MATH_MAX_QUESTION_CHARS = 8_192;
export const MATH_MAX_ANSWER_CHARS = 16_384;

export const Gsm8kRowSchema = z.object({
  question: z.string().min(1).max(MATH_MAX_QUESTION_CHARS),
  answer: z
    .string()
    .max(MATH_MAX_ANSWER_CHARS)
    .regex(/####\s*\S/, "must end with '#### <final answer>'"),
});

export interface MathProblem {
  readonly id: string;
  readonly question: string;
  /** The reference solution text. */
  readonly solution: string;
  /** The reference final answer (a label: absent in a served question, which is then not judged). */
  readonly answer?: number | undefined;
}

export const GSM8K_PATHS = {
  train: join(DATA_DIR, "gsm8k", "train.jsonl.gz"),
  test: join(DATA_DIR, "gsm8k", "test.jsonl.gz"),
} as const;

/** Loads GSM8K rows; the error names the row whose final answer is not a number. */
export async function loadGsm8k(source: DataSource, idPrefix: string): Promise<MathProblem[]> {
  const rows = await loadJsonl(source, Gsm8kRowSchema);
  return rows.map((row, i) => {
    const final = row.answer.slice(row.answer.lastIndexOf("####") + 4).trim();
    const answer = parseNumber(final);
    if (answer === null)
      throw new Error(
        `${String(source)}: row ${i + 1}: field answer: final answer "${final}" is not a number`,
      );
    return { id: `${idPrefix}/${i}`, question: row.question, solution: row.answer, answer };
  });
}

/** The shipped GSM8K split as tasks. */
export async function gsm8kTasks(split: Extract<Split, "train" | "test">): Promise<Task<MathProblem>[]> {
  const problems = await loadGsm8k(GSM8K_PATHS[split], `gsm8k/${split}`);
  return problems.map((p) => ({ id: p.id, split, payload: p }));
}
