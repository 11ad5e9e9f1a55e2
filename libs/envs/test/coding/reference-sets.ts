/**
 * The reference solutions the coding reward must accept, beyond HumanEval's canonical ones: MBPP
 * (974 problems, `data/mbpp`) and the CoopHumanEval problems that have a reference (`data/coophumaneval`
 * ships none; the 16 that reuse a HumanEval entry point borrow HumanEval's canonical solution).
 * Each becomes a `HarnessJob` exactly as an environment would build it.
 */
import { z } from "zod";
import {
  COOP_HUMANEVAL_PATH,
  type HarnessJob,
  loadHumanEval,
  loadJsonl,
  MBPP_PATH,
  mbppEntryPoint,
} from "../../src/coding/index.ts";

export interface ReferenceJob {
  readonly id: string;
  readonly job: HarnessJob;
}

const MbppRowSchema = z.object({
  task_id: z.number().int(),
  code: z.string().min(1),
  test_setup_code: z.string(),
  test_list: z.array(z.string().min(1)).min(1),
});

/** MBPP tasks `from`..`to` (task_id, inclusive): the reference code against its `test_list`, in asserts style. */
export async function mbppJobs(from = 1, to = 974): Promise<ReferenceJob[]> {
  const rows = await loadJsonl(MBPP_PATH, MbppRowSchema, "task_id");
  return rows
    .filter((r) => r.task_id >= from && r.task_id <= to)
    .map((r) => ({
      id: `mbpp/${r.task_id}`,
      job: {
        program: r.code,
        tests: [r.test_setup_code, ...r.test_list].filter((t) => t.trim() !== "").join("\n"),
        style: "asserts",
        entryPoint: mbppEntryPoint(r.code, r.test_list[0]!),
      },
    }));
}

const CoopRowSchema = z.object({
  task_id: z.string().min(1),
  prompt: z.string().min(1),
  test: z.string().min(1),
  entry_point: z.string().regex(/^[A-Za-z_]\w*$/),
});

/** CoopHumanEval problems whose entry point is a HumanEval one, with HumanEval's canonical solution. */
export async function coopHumanEvalJobs(): Promise<{ jobs: ReferenceJob[]; withoutReference: number }> {
  const rows = await loadJsonl(COOP_HUMANEVAL_PATH, CoopRowSchema, "task_id");
  const humaneval = new Map((await loadHumanEval()).map((p) => [p.entryPoint, p]));
  const jobs = rows.flatMap((r): ReferenceJob[] => {
    const reference = humaneval.get(r.entry_point);
    if (reference === undefined) return [];
    return [
      {
        id: `${r.task_id} (${reference.taskId})`,
        job: {
          program: `${reference.prompt}${reference.canonicalSolution}`,
          tests: r.test,
          style: "check",
          entryPoint: r.entry_point,
        },
      },
    ];
  });
  return { jobs, withoutReference: rows.length - jobs.length };
}
