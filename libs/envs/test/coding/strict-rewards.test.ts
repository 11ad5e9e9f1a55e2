/**
 * The coding teams' `strict` rewards (the default) against the `paper` ones, measured with the
 * cheap policies on a fixed subset of HumanEval (every 14th problem, 12 in all) with their exact
 * means. The same policies over all 164 problems give the table in docs/environments.md
 * (reward-table.ts). Each part's own cases are in its module's test: the harness's dependence
 * question and variants (harness.test.ts), the reference's mutants (mutants.test.ts), the strict
 * helper + main reward (aux-main-reward.test.ts) and the strict tester reward
 * (coder-tester-env.test.ts).
 */
import { describe, expect, it } from "vitest";
import { type CodingReward, coderTesterEnv, loadHumanEval } from "../../src/coding/index.ts";
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

import { doubleSum } from "./fixtures.ts";
import { testRunner } from "./local-python-runner.ts";

const { runner } = await testRunner();
const humanEval = await loadHumanEval();
const byId = (id: string) => humanEval.find((p) => p.taskId === id)!;

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
