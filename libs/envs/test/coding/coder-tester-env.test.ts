import { deepFreeze, Rng } from "@troupe/core";
import { describe, expect, it } from "vitest";
import {
  coderTesterEnv,
  codingTasks,
  loadHumanEval,
  strictTesterReward,
  type TestCaseResult,
  type TestReport,
} from "../../src/coding/index.ts";
import { py, doubleSumTask as task } from "./fixtures.ts";
import { countingRunner, testRunner } from "./local-python-runner.ts";

const { runner } = await testRunner();

describe("coder + tester environment", () => {
  // The tester's paper reward (Stronger-MAS); its strict default is tested in "strict tester reward" below.
  it("sequential tester → coder: exact local and team rewards (paper)", async () => {
    const env = coderTesterEnv({ runner, maxTurns: 3, reward: "paper" });
    const s0 = deepFreeze(await env.reset(task, 0));
    // Tester: 2 valid asserts and 1 wrong one (canonical fails it) → validity 2/3; the stub fails all → rejected.
    const tests = "assert double_sum([1]) == 2\nassert double_sum([2, 2]) == 8\nassert double_sum([]) == 5";
    const t1 = await env.step(s0, { tester: py(tests) });
    expect(t1.localRewards).toEqual({ tester: 0.5 * (2 / 3) + 0.5 * 1 });
    expect(t1.done).toBe(false);
    expect(t1.teamReward).toBe(0);

    // Coder: wrong on [] (returns 5): passes 2/3 hidden asserts, and passes all 3 generated tests → episode ends.
    const code = "def double_sum(xs):\n    return 2 * sum(xs) if xs else 5";
    const c1 = await env.step(deepFreeze(t1.state), { coder: py(code) });
    expect(c1.localRewards).toEqual({ coder: 2 / 3 });
    expect(c1.done).toBe(true);
    expect(c1.success).toBe(false);
    expect(c1.teamReward).toBe(0);
    expect(s0.code).toBeNull();
  });

  it("parallel turns: feedback on failing generated tests, then success", async () => {
    const env = coderTesterEnv({ runner, maxTurns: 3 });
    const s0 = await env.reset(task, 0);
    const good = "assert double_sum([1]) == 2\nassert double_sum([]) == 0";
    const r1 = await env.step(s0, { coder: py("def double_sum(xs):\n    return sum(xs)"), tester: py(good) });
    // Coder's code passes 1/3 hidden ([] → 0 is right; the others are wrong).
    expect(r1.localRewards.coder).toBeCloseTo(1 / 3, 12);
    // validity 1; discrimination 1: the coder's failing code and every mutant of the reference
    // (strict: return None, return 0, 3 * sum(xs)) fail an assert.
    expect(r1.localRewards.tester).toBe(1);
    expect(r1.done).toBe(false);
    const coderView = env.observe(r1.state, "coder").messages[0]!.content;
    expect(coderView).toContain("Passed 1 of 2 tests.");
    expect(coderView).toContain("assert double_sum([1]) == 2");
    const r2 = await env.step(r1.state, { coder: py("def double_sum(xs):\n    return 2 * sum(xs)") });
    expect(r2.localRewards).toEqual({ coder: 1 });
    expect([r2.done, r2.success, r2.teamReward]).toEqual([true, true, 1]);
  });

  it("tests that accept everything do not discriminate (paper)", async () => {
    const env = coderTesterEnv({ runner, reward: "paper" });
    const s0 = await env.reset(task, 0);
    const r = await env.step(s0, { tester: py("assert double_sum([1]) is None or True") });
    // Canonical passes (validity 1); the stub passes too (not rejected) → 0.5.
    expect(r.localRewards).toEqual({ tester: 0.5 });
  });

  it("judgeTester false: the same states, team reward and success, no tester reward and no reference runs", async () => {
    const counting = countingRunner(runner);
    const tests = py("assert double_sum([1]) == 2\nassert double_sum([]) == 0");
    const code = py("def double_sum(xs):\n    return 2 * sum(xs)");
    const play = async (judgeTester: boolean) => {
      counting.reset();
      const env = coderTesterEnv({ runner: counting.runner, maxTurns: 2, judgeTester });
      const t = await env.step(await env.reset(task, 0), { tester: tests });
      const testerRuns = counting.calls();
      const c = await env.step(t.state, { coder: code });
      return { t, c, testerRuns };
    };
    const judged = await play(true);
    const unjudged = await play(false);
    expect(judged.t.localRewards).toEqual({ tester: 1 });
    expect(unjudged.t.localRewards).toEqual({});
    expect(judged.testerRuns).toBeGreaterThan(0);
    expect(unjudged.testerRuns).toBe(0);
    expect(unjudged.t.state).toEqual(judged.t.state);
    expect([
      unjudged.c.state,
      unjudged.c.teamReward,
      unjudged.c.success,
      unjudged.c.done,
      unjudged.c.localRewards,
    ]).toEqual([judged.c.state, 1, true, true, { coder: 1 }]);
  });

  it("coderReward tiers: the single agent's tiers over their maximum, 2.1", async () => {
    const env = coderTesterEnv({ runner, maxTurns: 1, coderReward: "tiers" });
    const s0 = await env.reset(task, 0);
    const coder = async (code: string) => (await env.step(s0, { coder: py(code) })).localRewards.coder;
    // Defined with a return, compiles, 1 of 3 hidden asserts: (0.6 + 0.5 + 1/3) / 2.1.
    expect(await coder("def double_sum(xs):\n    return 0")).toBeCloseTo((0.6 + 0.5 + 1 / 3) / 2.1, 12);
    // Every hidden assert: 1, and the team's success.
    const right = await env.step(s0, { coder: py("def double_sum(xs):\n    return 2 * sum(xs)") });
    expect([right.localRewards.coder, right.success, right.teamReward]).toEqual([1, true, 1]);
    // Defined with a return, does not compile: 0.6 / 2.1.
    expect(await coder("def double_sum(xs):\n    return 2 * sum(xs")).toBeCloseTo(0.6 / 2.1, 12);
    // No `return <value>` (cut short), or another function's name: 0.
    expect(await coder("def double_sum(xs):\n    s = 2")).toBe(0);
    expect(await coder("def other(xs):\n    return 2 * sum(xs)")).toBe(0);
    // The default, Stronger-MAS's: the share of hidden asserts passed.
    const plain = coderTesterEnv({ runner, maxTurns: 1 });
    const r = await plain.step(await plain.reset(task, 0), {
      coder: py("def double_sum(xs):\n    return 0"),
    });
    expect(r.localRewards).toEqual({ coder: 1 / 3 });
    expect(() => coderTesterEnv({ runner, coderReward: "all" as "tiers" })).toThrow(
      'coderTesterEnv: coderReward must be "tests" or "tiers", got "all"',
    );
  });

  it("ends after maxTurns coder attempts", async () => {
    const env = coderTesterEnv({ runner, maxTurns: 1 });
    const s0 = await env.reset(task, 0);
    const r = await env.step(s0, { coder: py("def double_sum(xs):\n    return 0") });
    expect(r.done).toBe(true);
    expect(r.localRewards).toEqual({ coder: 1 / 3 });
  });

  it("random policy over HumanEval tasks, random stage orders: no exceptions, rewards within bounds", async () => {
    const env = coderTesterEnv({
      runner,
      maxTurns: 2,
      harness: { perTestTimeoutMs: 300, wallMs: 3000 },
    });
    const tasks = codingTasks(await loadHumanEval()).test.slice(0, 5);
    const rng = new Rng(5);
    for (const t of tasks) {
      const p = t.payload;
      const codes = [
        "",
        "nonsense ((",
        py(`${p.prompt}${p.canonicalSolution}`),
        py(`def ${p.entryPoint}(*a):\n    return None`),
        py("import os\nos._exit(0)"),
      ];
      const tests = [
        "",
        py(`assert ${p.entryPoint}() == 1`),
        py("assert True"),
        py(`x = ${p.entryPoint}\nassert x is not None`),
        "```python\nassert (",
      ];
      let state = deepFreeze(await env.reset(t, 0));
      for (let step = 0; step < 4 && !state.done; step++) {
        const order = rng.pick([["coder"], ["tester"], ["coder", "tester"]]);
        const actions: Record<string, string> = {};
        for (const a of order) actions[a] = a === "coder" ? rng.pick(codes) : rng.pick(tests);
        const r = await env.step(state, actions);
        expect(r.teamReward).toBeGreaterThanOrEqual(env.rewardBounds!.team[0]);
        expect(r.teamReward).toBeLessThanOrEqual(env.rewardBounds!.team[1]);
        for (const v of Object.values(r.localRewards)) {
          expect(v).toBeGreaterThanOrEqual(env.rewardBounds!.local[0]);
          expect(v).toBeLessThanOrEqual(env.rewardBounds!.local[1]);
        }
        state = deepFreeze(r.state);
      }
    }
  }, 60_000);
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
