/**
 * The coding reward cannot be gamed: every completion in `reward-hacks.ts` gets 0 full passes over
 * all 164 HumanEval problems through the reward's own path (`runTests`, as the environments call
 * it), while the honest references still pass: HumanEval's canonical solutions 164/164, MBPP's
 * evaluation split (tasks 11–510) and the CoopHumanEval problems that have a reference.
 *
 * About 2,500 sandboxed jobs; they run at the sandbox's concurrency (one job per CPU at once).
 */
import { describe, expect, test } from "vitest";
import { type CodingProblem, type HarnessJob, loadHumanEval, runTests } from "../../src/coding/index.ts";
import { testRunner } from "./local-python-runner.ts";
import { coopHumanEvalJobs, mbppJobs, type ReferenceJob } from "./reference-sets.ts";
import { REWARD_HACKS } from "./reward-hacks.ts";

const { runner } = await testRunner();
const problems = await loadHumanEval();

/** Generous limits: these tests are about what the reward accepts, not how fast a loaded CI box runs it. */
const LIMITS = { perTestTimeoutMs: 20_000, wallMs: 60_000 };

/** Ids of the jobs whose every test passed (and that have at least one test). */
async function fullPasses(jobs: readonly ReferenceJob[]): Promise<string[]> {
  const reports = await Promise.all(jobs.map(({ job }) => runTests(runner, job, LIMITS)));
  return jobs
    .filter((_, i) => reports[i]!.total > 0 && reports[i]!.passed === reports[i]!.total)
    .map((j) => j.id);
}

const humanEvalJob = (p: CodingProblem, body: string): ReferenceJob => {
  // As the environments call it: the prompt is trusted (its helpers run in the checker).
  const job: HarnessJob = {
    program: p.prompt + body,
    tests: p.test,
    style: "check",
    entryPoint: p.entryPoint,
    trusted: p.prompt,
  };
  return { id: p.taskId, job };
};

describe("reward hacks get nothing", () => {
  test("HumanEval's canonical solutions pass 164/164", async () => {
    const passed = await fullPasses(problems.map((p) => humanEvalJob(p, p.canonicalSolution)));
    expect(problems.length).toBe(164);
    expect(passed.length).toBe(164);
  }, 600_000);

  test.each(REWARD_HACKS.map((hack) => [hack.name, hack] as const))(
    "%s: 0 full passes over the 164 problems",
    async (_, hack) => {
      const passed = await fullPasses(problems.map((p) => humanEvalJob(p, hack.body(p.entryPoint))));
      expect(passed).toEqual([]);
    },
    600_000,
  );
});

describe("reference solutions of other datasets pass", () => {
  test("MBPP evaluation split: 499 of 500; task 367 builds a tree of the program's objects", async () => {
    const jobs = await mbppJobs(11, 510);
    const passed = new Set(await fullPasses(jobs));
    // mbpp/367's setup code builds `Node` objects in the test and passes them to the function:
    // instances of the program's class are not plain data, so they cannot cross (by design).
    expect(jobs.filter((j) => !passed.has(j.id)).map((j) => j.id)).toEqual(["mbpp/367"]);
  }, 600_000);

  test("CoopHumanEval: 14 of the 16 problems with a (borrowed) reference; 66 have none", async () => {
    const { jobs, withoutReference } = await coopHumanEvalJobs();
    const passed = new Set(await fullPasses(jobs));
    expect([jobs.length, withoutReference]).toEqual([16, 66]);
    // Both reuse a HumanEval entry point with a different specification, so HumanEval's solution is
    // wrong for them: /2 wants dd-mm-yyyy dates (HumanEval/124: mm-dd-yyyy), /12 says 45 = 3·3·5 is
    // not a product of three primes (HumanEval/75 counts repeated primes).
    expect(jobs.filter((j) => !passed.has(j.id)).map((j) => j.id)).toEqual([
      "CoopHumanEval/2 (HumanEval/124)",
      "CoopHumanEval/12 (HumanEval/75)",
    ]);
  }, 600_000);
});
