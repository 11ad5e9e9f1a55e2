import { describe, expect, it } from "vitest";
import { type CodingProblem, loadHumanEval, runTests } from "../../src/coding/index.ts";
import { doubleSum } from "./fixtures.ts";
import { testRunner } from "./local-python-runner.ts";

const { runner } = await testRunner();
const problems = new Map((await loadHumanEval()).map((p) => [p.taskId, p]));

const canonical = (p: CodingProblem) => `${p.prompt}${p.canonicalSolution}`;
/** A job running the double_sum checks against `program`. */
const doubleSumJob = (program: string, entryPoint = "double_sum") =>
  ({ program, tests: doubleSum.test, style: "check", entryPoint }) as const;

describe("test harness", () => {
  it("splits HumanEval checks into asserts (loops count once) and the canonical solutions pass", async () => {
    // Expected counts read off the test text: /0 has 7 asserts; /32 one for-loop; /38 one loop; /53 5 asserts + a loop.
    const expected: Record<string, number> = {
      "HumanEval/0": 7,
      "HumanEval/32": 1,
      "HumanEval/38": 1,
      "HumanEval/53": 6,
    };
    const reports = await Promise.all(
      Object.keys(expected).map((id) => {
        const p = problems.get(id)!;
        return runTests(runner, {
          program: canonical(p),
          tests: p.test,
          style: "check",
          entryPoint: p.entryPoint,
        });
      }),
    );
    Object.keys(expected).forEach((id, i) => {
      expect(reports[i]!.total, id).toBe(expected[id]);
      expect(reports[i]!.passed, id).toBe(expected[id]);
      expect(reports[i]!.setupErrors, id).toEqual([]);
    });
  });

  it("counts partial passes, skips `assert True`, and reports errors per assert", async () => {
    const program = `${doubleSum.prompt}\ndef double_sum(xs):\n    print("hello")\n    return 2 * sum(xs) if xs else 1\n`;
    const r = await runTests(runner, doubleSumJob(program));
    expect([r.passed, r.total]).toEqual([2, 3]);
    expect(r.tests[0]).toMatchObject({
      source: "assert candidate(zero) == 0",
      passed: false,
      error: "AssertionError",
    });
    expect(r.output).toContain("hello");
  });

  it("reports syntax errors, a missing entry point and per-test timeouts", async () => {
    const bad = await runTests(runner, doubleSumJob("def f(:\n", "f"));
    expect(bad.syntaxOk).toBe(false);
    expect(bad.syntaxError).toMatch(/^line 1:/);
    // Tests are still listed (not run), so feedback can say "0 of 3".
    expect([bad.passed, bad.total]).toEqual([0, 3]);

    const missing = await runTests(runner, doubleSumJob("x = 1\n"));
    expect(missing.syntaxOk).toBe(true);
    expect(missing.loadError).toMatch(/entry point 'double_sum' is not defined/);
    expect([missing.passed, missing.total]).toEqual([0, 3]);

    const loop = "def double_sum(xs):\n    while True:\n        pass\n";
    const job = doubleSumJob(loop);
    const slow = await runTests(runner, job, { perTestTimeoutMs: 200, wallMs: 5000 });
    expect(slow.tests.map((t) => [t.passed, t.timedOut, t.error])).toEqual([
      [false, true, "timeout"],
      [false, true, "timeout"],
      [false, true, "timeout"],
    ]);
    // The wall-clock limit of the whole run stops the tests that were not reached.
    const walled = await runTests(runner, job, { perTestTimeoutMs: 5000, wallMs: 800 });
    expect(walled.tests.map((t) => t.error)).toEqual(Array(3).fill("no result (timeout)"));
    expect(walled.runStatus).toBe("timeout");
  });

  it("is not fooled by a program that exits, prints fake lines, or raises while loading", async () => {
    const exits = await runTests(
      runner,
      doubleSumJob(
        `${doubleSum.prompt}${doubleSum.canonicalSolution}\nimport os\nprint("troupe-" + "0" * 32 + " 0 PASS")\nos._exit(0)\n`,
      ),
    );
    expect(exits.passed).toBe(0);
    expect(exits.harnessError).toMatch(/no result/);
    const raises = await runTests(
      runner,
      doubleSumJob('raise RuntimeError("boom")\ndef double_sum(xs):\n    return 2 * sum(xs)\n'),
    );
    expect(raises.loadError).toMatch(/not defined/);
    expect(raises.passed).toBe(0);
  });

  it("runs model-written asserts (asserts style) against a program", async () => {
    const tests = "assert double_sum([1]) == 2\nassert double_sum([]) == 1\nx = 3\nassert x == 3\n";
    const r = await runTests(runner, {
      program: canonical(doubleSum),
      tests,
      style: "asserts",
      entryPoint: "double_sum",
    });
    // `assert x == 3` does not mention the function under test, so it is setup, not a test.
    expect(r.tests.map((t) => t.passed)).toEqual([true, false]);
  });

  it("runs the prompt's helpers from `trusted` in the checker, not the completion's redefinitions", async () => {
    const p = problems.get("HumanEval/38")!;
    // decode_cyclic as the identity, and encode_cyclic (a prompt helper the test calls) redefined to match.
    const program = `${p.prompt}    return s\n\ndef encode_cyclic(s):\n    return s\n`;
    const job = { program, tests: p.test, style: "check", entryPoint: p.entryPoint } as const;
    const [untrusted, trusted] = await Promise.all([
      runTests(runner, job),
      runTests(runner, { ...job, trusted: p.prompt }),
    ]);
    expect([untrusted.passed, untrusted.total]).toEqual([1, 1]);
    expect([trusted.passed, trusted.total]).toEqual([0, 1]);
    expect(trusted.tests[0]!.error).toBe("AssertionError");
  });

  it("refuses a job whose entry point is not an identifier, with one clear line", async () => {
    await expect(
      runTests(runner, { program: "", tests: "", style: "asserts", entryPoint: "f; import os" }),
    ).rejects.toThrow("runTests: entryPoint must be a Python identifier");
  });

  it("answers the static questions with ast", async () => {
    const main = "def double_sum(xs):\n    '''doc'''\n    aux(xs)\n    v = aux(xs)\n    return v\n";
    const r = await runTests(runner, {
      program: "pass",
      tests: "",
      style: "asserts",
      entryPoint: "double_sum",
      functions: [
        { label: "main", code: main, name: "double_sum", callee: "aux" },
        { label: "aux", code: "def aux(xs:\n    return 1\n", name: "aux" },
        { label: "none", code: "def aux2(x):\n    return 1\n", name: "aux" },
      ],
    });
    expect(r.functions).toEqual([
      {
        label: "main",
        name: "double_sum",
        defined: true,
        hasReturn: true,
        parses: true,
        callsCallee: true,
        isWrapper: false,
        ignoredCalleeCalls: 1,
      },
      {
        label: "aux",
        name: "aux",
        defined: true,
        hasReturn: true,
        parses: false,
        callsCallee: false,
        isWrapper: false,
        ignoredCalleeCalls: 0,
      },
      {
        label: "none",
        name: "aux",
        defined: false,
        hasReturn: false,
        parses: true,
        callsCallee: false,
        isWrapper: false,
        ignoredCalleeCalls: 0,
      },
    ]);
  });

  it.runIf(process.env.TROUPE_HUMANEVAL_ALL === "1")(
    "every canonical HumanEval solution passes all of its asserts (opt-in: TROUPE_HUMANEVAL_ALL=1)",
    async () => {
      for (const p of problems.values()) {
        const r = await runTests(runner, {
          program: canonical(p),
          tests: p.test,
          style: "check",
          entryPoint: p.entryPoint,
        });
        expect(r.total, p.taskId).toBeGreaterThan(0);
        expect(r.passed, p.taskId).toBe(r.total);
      }
    },
    600_000,
  );
});
