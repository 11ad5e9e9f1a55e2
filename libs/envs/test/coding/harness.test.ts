import { describe, expect, it } from "vitest";
import { type CodingProblem, loadHumanEval, runTests } from "../../src/coding/index.ts";
import { doubleSum } from "./fixtures.ts";
import { countingRunner, testRunner } from "./local-python-runner.ts";

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

describe("harness: does main's result depend on aux? (dependence)", () => {
  const ask = (aux: string, main: string, dependence = true) =>
    runTests(
      runner,
      {
        program: `${doubleSum.prompt}\n${aux}\n\n${main}\n`,
        tests: doubleSum.test,
        style: "check",
        entryPoint: "double_sum",
        trusted: doubleSum.prompt,
        ...(dependence ? { dependence: { callee: "aux" } } : {}),
      },
      { perTestTimeoutMs: 3000 },
    );
  const sum = "def aux(xs):\n    return sum(xs)";
  const identity = "def aux(x):\n    return x";

  it.each([
    ["aux's result is used", sum, "def double_sum(xs):\n    s = aux(xs)\n    return 2 * s", true],
    [
      "main returns aux's result",
      "def aux(xs):\n    return 2 * sum(xs)",
      "def double_sum(xs):\n    return aux(xs)",
      true,
    ],
    [
      "aux takes no argument",
      "def aux():\n    return 2",
      "def double_sum(xs):\n    return aux() * sum(xs)",
      true,
    ],
    // A raise with the stand-in is no evidence: the blank (0) breaks `1 // aux(xs)`, whose result
    // main then multiplies by zero.
    [
      "the stand-in only makes main raise",
      sum,
      "def double_sum(xs):\n    k = 0 * (1 // (aux(xs) or 1))\n    return 2 * sum(xs) + k",
      false,
    ],
    [
      "a call in dead code",
      identity,
      "def double_sum(xs):\n    if False:\n        _unused = aux(0)\n    return 2 * sum(xs)",
      false,
    ],
    ["a result never used", sum, "def double_sum(xs):\n    y = aux(xs)\n    return 2 * sum(xs)", false],
    // The blank changes main's answer here (aux's answer is main's), but aux does no work:
    // `calleeUse.noWork`, which the reward reads.
    [
      "an identity helper threaded through the return",
      identity,
      "def double_sum(xs):\n    t = 2 * sum(xs)\n    return aux(t)",
      true,
    ],
    // Without the control replay, the drifting answer would pass for a dependence.
    [
      "main's answers drift by themselves (the control replay catches it)",
      identity,
      "_n = [0]\ndef double_sum(xs):\n    _n[0] += 1\n    y = aux(xs)\n    return 2 * sum(xs) + (0 if _n[0] <= 3 else _n[0])",
      false,
    ],
  ])("%s", async (_what, aux, main, expected) => {
    const r = await ask(aux, main);
    expect([r.passed, r.total]).toEqual([3, 3]);
    expect(r.calleeMatters).toBe(expected);
  });

  it("is asked only on request, only when every test passes, and the tests are unchanged by it", async () => {
    const main = "def double_sum(xs):\n    s = aux(xs)\n    return 2 * s if xs else 1";
    const plain = await ask(sum, main, false);
    const asked = await ask(sum, main);
    expect(plain.calleeMatters).toBeUndefined();
    expect(asked.tests).toEqual(plain.tests);
    expect([asked.passed, asked.total, asked.calleeMatters]).toEqual([2, 3, false]);
    expect(asked.calleeUse).toEqual({
      compared: 0,
      changed: 0,
      failed: 0,
      matters: false,
      wrapper: false,
      skipped: "not every test passes",
    });
  });

  // [case, helper, main, calleeUse without `compared` (always 3: the three test calls)]
  it.each([
    [
      "aux's work used",
      sum,
      "def double_sum(xs):\n    s = aux(xs)\n    return 2 * s",
      { changed: 2, matters: true, wrapper: false },
    ],
    // The blank of 0 is 0: the empty list's answer does not change, the other two do.
    [
      "a wrapper written in three lines",
      "def aux(xs):\n    return 2 * sum(xs)",
      "def double_sum(xs):\n    v = aux(xs)\n    w = v\n    return w",
      { changed: 2, matters: true, wrapper: true },
    ],
    [
      "a constant helper",
      "def aux():\n    return 2",
      "def double_sum(xs):\n    return aux() * sum(xs)",
      { changed: 2, matters: true, wrapper: false, noWork: "returns the same value for every input" },
    ],
    [
      "an identity helper",
      identity,
      "def double_sum(xs):\n    return aux(2 * sum(xs))",
      { changed: 2, matters: true, wrapper: true, noWork: "returns its argument" },
    ],
    [
      "aux never called",
      identity,
      "def double_sum(xs):\n    if False:\n        aux(0)\n    return 2 * sum(xs)",
      { changed: 0, matters: false, wrapper: false, noWork: "not called" },
    ],
    // The old stand-in turned 0 into a list: `[] * 0` is `[]` and `r + []` raised, which counted.
    [
      "a contribution of zero",
      "def aux(xs):\n    return len(xs)",
      "def double_sum(xs):\n    return 2 * sum(xs) + aux(xs) * 0",
      { changed: 0, matters: false, wrapper: false },
    ],
    // In place: the stand-in runs aux on a copy of its arguments, so the doubling does not reach
    // main; aux returns None every time but works through its argument.
    [
      "aux works in place on its argument",
      "def aux(xs):\n    xs[:] = [2 * x for x in xs]",
      "def double_sum(xs):\n    ys = list(xs)\n    aux(ys)\n    return sum(ys)",
      { changed: 2, matters: true, wrapper: false },
    ],
    // A generator's blank is an iterator that yields nothing; its results are not plain data, so
    // they are never "the same value for every input".
    [
      "aux is a generator",
      "def aux(xs):\n    for x in xs:\n        yield 2 * x",
      "def double_sum(xs):\n    return sum(aux(xs))",
      { changed: 2, matters: true, wrapper: false },
    ],
  ] as const)("calleeUse: %s", async (_what, aux, main, expected) => {
    const r = await ask(aux, main);
    expect([r.passed, r.total]).toEqual([3, 3]);
    expect(r.calleeUse).toEqual({ compared: 3, failed: 0, ...expected });
  });

  // One test call: whether aux's one value is a constant is asked of aux itself, in a probe run
  // (its recorded arguments blanked: [1, 2] becomes [0, 0]).
  it.each([
    [
      "a constant gate",
      "def aux(xs):\n    return 7",
      "def double_sum(xs):\n    if aux(xs) != 7:\n        return None\n    return 2 * sum(xs)",
      "returns the same value for every input",
    ],
    ["aux's work used", sum, "def double_sum(xs):\n    return 2 * aux(xs)", undefined],
  ])("calleeUse with one test call: %s", async (_what, aux, main, noWork) => {
    const r = await runTests(runner, {
      program: `${doubleSum.prompt}\n${aux}\n\n${main}\n`,
      tests: "def check(candidate):\n    assert candidate([1, 2]) == 6\n",
      style: "check",
      entryPoint: "double_sum",
      dependence: { callee: "aux" },
    });
    expect([r.passed, r.total, r.calleeUse?.compared, r.calleeUse?.matters]).toEqual([1, 1, 1, true]);
    expect(r.calleeUse?.noWork).toBe(noWork);
  });

  // A selector returns one of its arguments, but not the same one on every call: that is work (the
  // answer of HumanEval/74 and /150 is one of the arguments).
  it("calleeUse: a helper that selects one of its arguments does work", async () => {
    const r = await runTests(runner, {
      program:
        'def bigger(a, b):\n    """The list with the larger sum."""\n\n' +
        "def aux(a, b):\n    return a if sum(a) >= sum(b) else b\n\n" +
        "def bigger(a, b):\n    return aux(a, b)\n",
      tests:
        "def check(candidate):\n    assert candidate([1], [2]) == [2]\n    assert candidate([3], [1]) == [3]\n",
      style: "check",
      entryPoint: "bigger",
      dependence: { callee: "aux" },
    });
    expect([r.passed, r.total]).toEqual([2, 2]);
    expect(r.calleeUse).toEqual({ compared: 2, changed: 2, failed: 0, matters: true, wrapper: true });
  });

  it("calleeUse: each main tell of the old in-process probe sees nothing (fresh processes, same order, same names)", async () => {
    const tells = [
      "def double_sum(xs, _aux=aux):\n    if aux is not _aux:\n        return None\n    _ = aux(xs)\n    return 2 * sum(xs)",
      "def double_sum(xs):\n    if aux.__name__ != 'aux' or aux.__code__.co_name != 'aux':\n        return None\n    _ = aux(xs)\n    return 2 * sum(xs)",
      "import sys\ndef double_sum(xs):\n    if sys._getframe(1).f_globals is globals():\n        return None\n    _ = aux(xs)\n    return 2 * sum(xs)",
      "_n = {}\ndef double_sum(xs):\n    _n[repr(xs)] = _n.get(repr(xs), 0) + 1\n    if _n[repr(xs)] >= 2:\n        return None\n    _ = aux(xs)\n    return 2 * sum(xs)",
    ];
    for (const main of tells) {
      const r = await ask(sum, main);
      expect([r.passed, r.total], main).toEqual([3, 3]);
      expect(r.calleeUse?.changed, main).toBe(0);
    }
  });

  it("is false when the program does not compile", async () => {
    const r = await ask(sum, "def double_sum(xs:\n    return aux(xs)");
    expect([r.syntaxOk, r.calleeMatters]).toEqual([false, false]);
  });
});

describe("harness: the same tests against other functions of the program (variants)", () => {
  it("rebinds the entry point to each variant; a missing one runs nothing", async () => {
    const program =
      `${doubleSum.prompt}${doubleSum.canonicalSolution}\n` +
      "def m0(xs):\n    return None\n\ndef m1(xs):\n    return 2 * sum(xs) if xs else 1\n\n" +
      "def m2(xs):\n    while True:\n        pass\n";
    const tests = "assert double_sum([1]) == 2\nassert double_sum([]) == 0";
    const r = await runTests(
      runner,
      { program, tests, style: "asserts", entryPoint: "double_sum", variants: ["m0", "m1", "m2", "nope"] },
      { perTestTimeoutMs: 300 },
    );
    expect([r.passed, r.total]).toEqual([2, 2]);
    expect(r.variants!.map((v) => [v.name, v.passed, v.total])).toEqual([
      ["m0", 0, 2],
      ["m1", 1, 2],
      ["m2", 0, 2],
      ["nope", 0, 2],
    ]);
    expect(r.variants![1]!.tests[1]).toMatchObject({ passed: false, error: "AssertionError" });
    expect(r.variants![2]!.tests.map((t) => t.timedOut)).toEqual([true, true]);
    expect(r.variants![3]!.error).toMatch(/^not run: could not bind double_sum to nope \(NameError/);
  });

  it("variantsWhen some-test-passes: runs them when a test passes, and none when every test fails", async () => {
    const program = `${doubleSum.prompt}${doubleSum.canonicalSolution}\n` + "def m0(xs):\n    return None\n";
    const job = { program, style: "asserts", entryPoint: "double_sum", variants: ["m0"] } as const;
    // Sandbox calls of any kind (connected or not); a job without variants makes `one` of them.
    const counting = countingRunner(runner);
    await runTests(counting.runner, {
      program,
      style: "asserts",
      entryPoint: "double_sum",
      tests: "assert double_sum([1]) == 2",
    });
    const one = counting.calls();
    expect(one).toBeGreaterThan(0);
    counting.reset();
    const oneValid = await runTests(counting.runner, {
      ...job,
      tests: "assert double_sum([1]) == 2\nassert double_sum([]) == 5",
      variantsWhen: "some-test-passes",
    });
    expect([oneValid.passed, counting.calls()]).toEqual([1, 2 * one]);
    expect(oneValid.variants!.map((v) => [v.name, v.passed, v.total, v.error])).toEqual([
      ["m0", 0, 2, undefined],
    ]);

    counting.reset();
    const noneValid = await runTests(counting.runner, {
      ...job,
      tests: "assert double_sum([1]) == 3\nassert double_sum([]) == 5",
      variantsWhen: "some-test-passes",
    });
    expect([noneValid.passed, counting.calls()]).toEqual([0, one]);
    expect(noneValid.variants).toEqual([
      {
        name: "m0",
        passed: 0,
        total: 2,
        error: "not run: no test passes on the program",
        tests: [
          {
            source: "assert double_sum([1]) == 3",
            passed: false,
            error: "not run: no test passes on the program",
            noResult: true,
          },
          {
            source: "assert double_sum([]) == 5",
            passed: false,
            error: "not run: no test passes on the program",
            noResult: true,
          },
        ],
      },
    ]);
    // The same failing tests with the default run the variant beside them.
    counting.reset();
    await runTests(counting.runner, { ...job, tests: "assert double_sum([1]) == 3" });
    expect(counting.calls()).toBe(2 * one);
  });
});
