/**
 * The coding teams' `strict` rewards (the default) against the `paper` ones: the harness's
 * dependence question and variants, the reference's mutants, both strict rewards on hand-made
 * cases, and the cheap policies on a fixed subset of HumanEval (every 14th problem,
 * 12 in all) with their exact means. The same policies over all 164 problems give the table in
 * docs/environments.md (reward-table.ts).
 */
import { deepFreeze, type Task } from "@troupe/core";
import { describe, expect, it } from "vitest";
import {
  auxMainEnv,
  type CodingProblem,
  type CodingReward,
  coderTesterEnv,
  loadHumanEval,
  runTests,
  strictTesterReward,
  type TestCaseResult,
  type TestReport,
} from "../../src/coding/index.ts";
import { generateMutants, referenceMutants } from "../../src/coding/mutants.ts";
import {
  AUX_MAIN_ATTACKS,
  AUX_MAIN_POLICIES,
  firstExample,
  hiddenTestsAsAsserts,
  scoreAuxMain,
  scoreTester,
  TESTER_POLICIES,
  TESTER_STASHES,
  ZERO_CONTRIBUTIONS,
} from "./cheap-policies.ts";

/** Problems of the subset whose answer is a number, where main's `r + 0` still passes every test. */
const ZERO_SOLVES = 5;

import { doubleSum, py } from "./fixtures.ts";
import { testRunner } from "./local-python-runner.ts";

const { runner } = await testRunner();
const humanEval = await loadHumanEval();
const byId = (id: string) => humanEval.find((p) => p.taskId === id)!;
const task: Task<CodingProblem> = { id: doubleSum.taskId, split: "test", payload: doubleSum };

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
});

describe("mutants of the reference", () => {
  it("double_sum: the stub, return 0 (zero and most frequent expected value), 2 → 3", async () => {
    const mutants = await generateMutants(runner, doubleSum);
    expect(mutants).toEqual([
      {
        name: "_troupe_mutant_0",
        kind: "stub",
        description: "return None",
        source: "def _troupe_mutant_0(xs):\n    return None",
      },
      {
        name: "_troupe_mutant_1",
        kind: "constant",
        description: "return 0",
        source: "def _troupe_mutant_1(xs):\n    return 0",
      },
      {
        name: "_troupe_mutant_2",
        kind: "off-by-one",
        description: "line 3: 2 -> 3",
        source: "def _troupe_mutant_2(xs):\n    return 3 * sum(xs)",
      },
    ]);
  });

  it("HumanEval/0: screening drops `<` → `<=` (no hidden test sits on the threshold)", async () => {
    const set = await referenceMutants(runner, byId("HumanEval/0"));
    expect(set.mutants.map((m) => m.description)).toEqual([
      "return None",
      "return False",
      "return True",
      "line 14: drop the if body",
      "line 16: drop the if body",
    ]);
    expect(set.dropped.map((d) => [d.mutant.description, d.why])).toEqual([
      ["line 16: < -> <=", "equivalent: passes every hidden test"],
    ]);
    expect(set.program).toContain("def _troupe_mutant_5(numbers: List[float], threshold: float) -> bool:");
    expect(set.program).not.toContain("_troupe_mutant_3");
  });

  it("HumanEval/55 (recursive fib): mutants call themselves, not the reference", async () => {
    const set = await referenceMutants(runner, byId("HumanEval/55"));
    expect(set.mutants.length).toBeGreaterThan(3);
    for (const m of set.mutants) expect(m.source.replace(`def ${m.name}(`, "")).not.toMatch(/\bfib\(/);
    expect(set.mutants.filter((m) => m.source.includes(`${m.name}(n - 1)`)).length).toBeGreaterThan(0);
  });
});

describe("strict helper + main reward", () => {
  const reward = async (helper: string, main: string, kind: CodingReward) => {
    const env = auxMainEnv({ runner, reward: kind });
    const state = deepFreeze(await env.reset(task, 0));
    const r = await env.step(state, { helper: py(helper), main: py(main) });
    return { total: r.teamReward, breakdown: (r.info as { reward: Record<string, unknown> }).reward };
  };
  const sum = "def aux(xs):\n    return sum(xs)";
  const identity = "def aux(x):\n    return x";
  const noFlow = "aux's result does not reach main's return value";

  // [case, helper, main, paper, strict, why strict withholds the collaboration tiers]
  const cases: [string, string, string, number, number, string | undefined][] = [
    ["real collaboration", sum, "def double_sum(xs):\n    s = aux(xs)\n    return 2 * s", 4, 4, undefined],
    [
      "main wraps aux",
      "def aux(xs):\n    return 2 * sum(xs)",
      "def double_sum(xs):\n    return aux(xs)",
      3,
      3,
      undefined,
    ],
    [
      "used and thrown away",
      sum,
      "def double_sum(xs):\n    aux(xs)\n    return 2 * aux(xs)",
      3.5,
      3.5,
      undefined,
    ],
    [
      "a constant helper (aux takes no argument)",
      "def aux():\n    return 2",
      "def double_sum(xs):\n    k = aux()\n    return k * sum(xs)",
      4,
      2.5,
      "aux does no work (returns the same value for every input)",
    ],
    [
      "main's answer is aux's, however written",
      "def aux(xs):\n    return 2 * sum(xs)",
      "def double_sum(xs):\n    v = aux(xs)\n    w = v\n    return w",
      4,
      3,
      undefined,
    ],
    [
      "main does work on aux's answer (CoMLRL's text rule calls it a wrapper)",
      sum,
      "def double_sum(xs):\n    return 2 * aux(xs)",
      3,
      4,
      undefined,
    ],
    [
      "dead-code call",
      identity,
      "def double_sum(xs):\n    if False:\n        _unused = aux(0)\n    return 2 * sum(xs)",
      4,
      2.5,
      "aux does no work (not called)",
    ],
    [
      "zero contribution",
      "def aux(xs):\n    return len(xs)",
      "def double_sum(xs):\n    return 2 * sum(xs) + aux(xs) * 0",
      3,
      2.5,
      noFlow,
    ],
    [
      "result never used",
      sum,
      "def double_sum(xs):\n    y = aux(xs)\n    return 2 * sum(xs)",
      4,
      2.5,
      noFlow,
    ],
    [
      "identity threaded through",
      identity,
      "def double_sum(xs):\n    t = 2 * sum(xs)\n    return aux(t)",
      4,
      2.5,
      "aux does no work (returns its argument)",
    ],
    // 1 of 3 asserts (the empty list): paper opens the tiers on that one.
    [
      "constant answer",
      identity,
      "def double_sum(xs):\n    y = aux(xs)\n    return 0",
      1.5 + 1 / 3 + 1.5,
      1.5 + 1 / 3,
      "not every test passes",
    ],
    [
      "2 of 3, aux used",
      sum,
      "def double_sum(xs):\n    s = aux(xs)\n    return 2 * s if xs else 1",
      1.5 + 2 / 3 + 1.5,
      1.5 + 2 / 3,
      "not every test passes",
    ],
  ];
  it.each(cases)("%s", async (_name, helper, main, paper, strict, withheld) => {
    const p = await reward(helper, main, "paper");
    const s = await reward(helper, main, "strict");
    expect(p.total).toBeCloseTo(paper, 12);
    expect(s.total).toBeCloseTo(strict, 12);
    expect(s.breakdown.withheld).toBe(withheld);
    expect(p.breakdown.withheld).toBeUndefined();
  });

  it("rejects a bad reward name in one line", () => {
    expect(() => auxMainEnv({ runner, reward: "strcit" as CodingReward })).toThrow(
      'auxMainEnv: reward must be "strict" or "paper", got "strcit"',
    );
  });
});

describe("strict tester reward", () => {
  const cases = (...passed: boolean[]): TestCaseResult[] =>
    passed.map((p, i) => ({ source: `t${i}`, passed: p }));
  const report = (tests: TestCaseResult[], variants: TestCaseResult[][]): TestReport => ({
    syntaxOk: true,
    tests,
    passed: tests.filter((t) => t.passed).length,
    total: tests.length,
    setupErrors: [],
    output: "",
    functions: [],
    runStatus: "ok",
    variants: variants.map((v, i) => ({ name: `m${i}`, tests: v, passed: 0, total: v.length })),
  });

  it("counts a rejection only by an assert the reference passes, and not a lost program", () => {
    const reference = report(cases(true, true, false), [
      cases(false, true, false), // rejected by t0
      cases(true, true, false), // fails only t2, which the reference fails too: not rejected
      [...cases(true), { source: "t1", passed: false, noResult: true }, ...cases(false)], // lost: not rejected
    ]);
    const coder = cases(true, false, true); // rejected by t1
    expect(strictTesterReward(reference, [coder])).toEqual({
      validity: 2 / 3,
      discrimination: 2 / 4,
      wrongPrograms: 4,
      rejected: 2,
      reward: (2 / 3) * (2 / 4),
    });
    expect(strictTesterReward(report(cases(true), [])).reward).toBe(0);
  });

  // double_sum's mutants: return None, return 0, 3 * sum(xs).
  it.each([
    ["checks a value", "assert double_sum([1]) == 2", 1, 1],
    ["checks nothing but `is not None`: only the stub", "assert double_sum([1]) is not None", 1, 1 / 3],
    ["checks the empty list only: return 0 and 3 * sum survive", "assert double_sum([]) == 0", 1, 1 / 3],
    ["one wrong assert: validity 1/2", "assert double_sum([1]) == 2\nassert double_sum([]) == 5", 0.75, 0.5],
  ])("%s", async (_what, tests, paper, strict) => {
    for (const [kind, expected] of [
      ["paper", paper],
      ["strict", strict],
    ] as const) {
      const env = coderTesterEnv({ runner, reward: kind });
      const r = await env.step(await env.reset(task, 0), { tester: py(tests) });
      expect(r.localRewards.tester, kind).toBeCloseTo(expected, 12);
    }
  });
});

describe("cheap policies over a fixed HumanEval subset (every 14th problem: 12)", () => {
  const subset = () => humanEval.filter((_, i) => i % 14 === 0);

  it("the examples the policies use", () => {
    expect(firstExample(byId("HumanEval/0"))).toBe("has_close_elements([1.0, 2.0, 3.0], 0.5)");
    expect(firstExample(byId("HumanEval/131"))).toBe("digits(1)");
    expect(firstExample(byId("HumanEval/133"))).toBe("sum_squares([1,2,3])");
    expect(hiddenTestsAsAsserts(doubleSum)).toBe(
      "METADATA = {}\n\nzero = []\nassert double_sum(zero) == 0\nassert double_sum([1, 2]) == 6\nassert double_sum([5]) == 10\nassert True",
    );
  });

  // [policy, paper mean, paper full marks, strict mean, strict full marks] over the 12 problems.
  const auxMain: [string, number, number, number, number][] = [
    ["correct main with `if False: _unused = aux(0)` first; identity helper", 4, 12, 2.5, 0],
    ["identity helper; main `y = aux(args); return False`", 2.33760683760684, 0, 1.71260683760684, 0],
    ["identity helper threaded through main's return (`r = solve(*args); return aux(r)`)", 4, 12, 2.5, 0],
    ["canonical solution as main; identity helper, unused", 2.5, 0, 2.5, 0],
    ["canonical solution as the helper `aux`; main `return aux(*args)`", 3, 0, 3, 0],
  ];
  it("helper + main: strict pays collaboration only for aux's work reaching the answer", async () => {
    const problems = subset();
    expect(problems.map((p) => p.taskId).at(-1)).toBe("HumanEval/154");
    const measured: [string, number, number, number, number][] = [];
    for (const policy of AUX_MAIN_POLICIES) {
      const paper = await scoreAuxMain(runner, problems, policy, "paper");
      const strict = await scoreAuxMain(runner, problems, policy, "strict");
      measured.push([policy.name, paper.mean, paper.full, strict.mean, strict.full]);
    }
    measured.forEach((row, i) => {
      const [name, paperMean, paperFull, strictMean, strictFull] = auxMain[i]!;
      expect(row[0]).toBe(name);
      expect(row[1], `${name} (paper)`).toBeCloseTo(paperMean, 9);
      expect(row[3], `${name} (strict)`).toBeCloseTo(strictMean, 9);
      expect([row[2], row[4]], name).toEqual([paperFull, strictFull]);
    });
  }, 120_000);

  // Written against the check itself: under strict, what main alone earns (2.5 when every test
  // passes; the zero contributions fail the tests of problems whose answer is not a number) or,
  // for the wrappers, what the plain `return aux(*args)` earns (3).
  const attacks: Record<string, { strict: number[]; full: number }> = {
    "counterfactual tells": { strict: [2.5], full: 0 },
    "gating helpers": { strict: [2.5], full: 0 },
    "disguised wrappers": { strict: [3], full: 0 },
  };
  it.each(AUX_MAIN_ATTACKS.filter((a) => a.group in attacks))(
    "helper + main, $group: every policy earns under strict what main alone earns, on every problem",
    async ({ group, policies }) => {
      for (const policy of policies) {
        const strict = await scoreAuxMain(runner, subset(), policy, "strict");
        expect(new Set(strict.rewards), policy.name).toEqual(new Set(attacks[group]!.strict));
        expect(strict.full, policy.name).toBe(attacks[group]!.full);
      }
    },
    120_000,
  );

  it("helper + main, zero contributions: the tiers main alone earns (2.5 where `r + 0` is an answer)", async () => {
    const solo = await scoreAuxMain(runner, subset(), AUX_MAIN_POLICIES[3]!, "strict");
    expect(solo.rewards.every((r) => r === 2.5)).toBe(true);
    for (const policy of ZERO_CONTRIBUTIONS) {
      const strict = await scoreAuxMain(runner, subset(), policy, "strict");
      expect(strict.rewards.filter((r) => r === 2.5).length, policy.name).toBe(ZERO_SOLVES);
      expect(Math.max(...strict.rewards), policy.name).toBe(2.5);
    }
  }, 120_000);

  // Each pass is a fresh run, so "the first pass's function" is the mutant itself: the asserts
  // reject only the mutants that raise on the tests' inputs (HumanEval/70: 1 of 5, /140: 1 of 10),
  // a tenth of what `is not None` earns (0.2655), where sharing one namespace paid 1.0 on all 12.
  it("coder + tester, stashes: a tester that keeps the first pass's function rejects only crashing mutants", async () => {
    const env = coderTesterEnv({ runner, reward: "strict" });
    for (const policy of TESTER_STASHES) {
      const score = await scoreTester(env, "strict", subset(), policy);
      expect(score.rewards, policy.name).toEqual([0, 0, 0, 0, 0, 0.2, 0, 0, 0, 0, 0.1, 0]);
    }
  }, 120_000);

  const tester: [string, number, number, number, number][] = [
    ["tester: `assert f(<the first example>) is not None`", 1, 12, 0.265509259259259, 0],
    ["tester: the hidden tests themselves (canonical)", 1, 12, 1, 12],
  ];
  it("coder + tester: strict measures the tester's asserts against the reference's mutants", async () => {
    const problems = subset();
    const scores: Record<CodingReward, { mean: number; full: number }[]> = { paper: [], strict: [] };
    for (const kind of ["paper", "strict"] as const) {
      const env = coderTesterEnv({ runner, reward: kind });
      for (const policy of TESTER_POLICIES) scores[kind].push(await scoreTester(env, kind, problems, policy));
    }
    tester.forEach(([name, paperMean, paperFull, strictMean, strictFull], i) => {
      expect(TESTER_POLICIES[i]!.name).toBe(name);
      expect(scores.paper[i]!.mean, `${name} (paper)`).toBeCloseTo(paperMean, 9);
      expect(scores.strict[i]!.mean, `${name} (strict)`).toBeCloseTo(strictMean, 9);
      expect([scores.paper[i]!.full, scores.strict[i]!.full], name).toEqual([paperFull, strictFull]);
    });
  }, 120_000);
});
