/**
 * No task a recipe can draw is unsolvable: every reference solution of every split the `coding`
 * environment offers passes all of its hidden tests through the reward's own path (`runTests` with
 * the job the environments build, at their default limits, judged by `isAllPassed`). The splits
 * come from the registry (train, and the test split of each `test` option), so a new dataset or a
 * changed split is covered without touching this file. CoopHumanEval ships no references: it is
 * only ever a test split, of the helper + main team, so there is nothing of it to run.
 *
 * About 1,134 connected runs (HumanEval 164, MBPP 970) at the sandbox's concurrency: 1.5 min on a 2-core machine. The
 * slowest reference statement takes 0.3 s (HumanEval/75), a tenth of the 3 s limit.
 */
import { createSandbox } from "@troupe/sandbox";
import { describe, expect, test } from "vitest";
import {
  CodingOptionsSchema,
  type CodingProblem,
  createEnvironment,
  isAllPassed,
  runTests,
} from "../../src/index.ts";

const sandbox = await createSandbox();

/** Every problem of the split, by id: `split` as `generateTasks` serves it for these options. */
function splitProblems(
  options: Record<string, unknown>,
  split: "train" | "test",
): Map<string, CodingProblem> {
  const tasks = createEnvironment("coding", { runner: sandbox, ...options }).generateTasks(split, 1e6, 0);
  return new Map(tasks.map((t) => [t.id, t.payload as CodingProblem]));
}

/** `id: passed/total first error` for each reference that does not pass all its tests. */
async function failingReferences(problems: readonly CodingProblem[]): Promise<string[]> {
  const { perTestTimeoutMs, wallMs } = CodingOptionsSchema.parse({});
  const reports = await Promise.all(
    problems.map((p) =>
      runTests(
        sandbox,
        {
          program: `${p.prompt}${p.canonicalSolution}\n`,
          tests: p.test,
          style: "check",
          entryPoint: p.entryPoint,
          trusted: p.prompt,
        },
        { perTestTimeoutMs, wallMs },
      ),
    ),
  );
  return problems.flatMap((p, i) => {
    const r = reports[i]!;
    if (isAllPassed(r)) return [];
    const why = r.harnessError ?? r.loadError ?? r.tests.find((t) => !t.passed)?.error ?? "no tests";
    return [`${p.taskId}: ${r.passed}/${r.total} ${why}`];
  });
}

describe("every reference of every split passes through the reward", () => {
  test("train (HumanEval's train half + MBPP) and test (HumanEval's test half): all pass", async () => {
    const train = splitProblems({ train: ["humaneval", "mbpp"] }, "train");
    const test = splitProblems({ roles: "coder-tester", test: "humaneval" }, "test");
    const coop = splitProblems({ test: "coophumaneval" }, "test");
    expect([train.size, test.size, coop.size]).toEqual([100 + 970, 64, 82]);
    expect([...coop.values()].filter((p) => p.canonicalSolution !== "")).toEqual([]);
    expect(await failingReferences([...train.values(), ...test.values()])).toEqual([]);
  }, 600_000);
});
