import { deepFreeze } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { AUX_MAIN_REWARD_TIERS, auxMainEnv, type CodingReward } from "../../src/coding/index.ts";
import { py, doubleSumTask as task } from "./fixtures.ts";
import { testRunner } from "./local-python-runner.ts";

const { runner } = await testRunner();

/** CoMLRL's tiers as published: `reward: "paper"` (the strict default is tested below). */
async function reward(helper: string, main: string) {
  const env = auxMainEnv({ runner, reward: "paper" });
  const state = deepFreeze(await env.reset(task, 0));
  const r = await env.step(state, { helper: py(helper), main: py(main) });
  return r;
}

describe("helper + main tiered reward (CoMLRL)", () => {
  // Each tier's value is pinned by the hand-computed totals below; here: full marks is their sum.
  it("max is the sum of the tiers a full-marks answer reaches", () => {
    const { auxDefined, mainDefined, syntax, tests, auxUsed, notWrapper, max } = AUX_MAIN_REWARD_TIERS;
    expect(auxDefined + mainDefined + syntax + tests + auxUsed + notWrapper).toBe(max);
    expect(max).toBe(4);
  });

  // Each case: hand-computed sum of the tiers it reaches.
  const cases: [string, string, string, number, Record<string, unknown>][] = [
    [
      "full marks: aux used non-trivially",
      "def aux(xs):\n    return sum(xs)",
      "def double_sum(xs):\n    s = aux(xs)\n    return 2 * s",
      0.4 + 0.6 + 0.5 + 1.0 + 0.5 + 1.0,
      { stoppedAt: undefined },
    ],
    [
      "main is a trivial wrapper of aux",
      "def aux(xs):\n    return 2 * sum(xs)",
      "def double_sum(xs):\n    return aux(xs)",
      0.4 + 0.6 + 0.5 + 1.0 + 0.5,
      { notWrapper: 0 },
    ],
    [
      "aux result thrown away",
      "def aux(xs):\n    return sum(xs)",
      "def double_sum(xs):\n    aux(xs)\n    return 2 * sum(xs)",
      0.4 + 0.6 + 0.5 + 1.0 + 0.5 + 1.0 - 0.5,
      { ignoredAuxResult: -0.5 },
    ],
    [
      "main missing: stop at structure",
      "def aux(xs):\n    return sum(xs)",
      "def other(xs):\n    return 1",
      0.4,
      { stoppedAt: "structure" },
    ],
    [
      "syntax error in aux: stop at syntax",
      "def aux(xs):\n    return sum(xs",
      "def double_sum(xs):\n    return 2 * sum(xs)",
      0.4 + 0.6,
      { stoppedAt: "syntax" },
    ],
    [
      "2 of 3 asserts, no aux use",
      "def aux(xs):\n    return 0",
      "def double_sum(xs):\n    return 2 * sum(xs) if xs else 1",
      0.4 + 0.6 + 0.5 + 2 / 3,
      { auxUsed: 0 },
    ],
    [
      "aux without return still unlocks the bonus (as in CoMLRL)",
      "def aux(xs):\n    print('hi')",
      "def double_sum(xs):\n    t = aux(xs)\n    return 2 * sum(xs)",
      0.6 + 0.5 + 1.0 + 0.5 + 1.0,
      { auxDefined: 0 },
    ],
    [
      "no test passes: no bonus even though aux is used",
      "def aux(xs):\n    return 7",
      "def double_sum(xs):\n    t = aux(xs)\n    return t + 100",
      0.4 + 0.6 + 0.5,
      { auxUsed: 0 },
    ],
  ];
  it.each(cases)("%s", async (_name, helper, main, expected, parts) => {
    const r = await reward(helper, main);
    expect(r.teamReward).toBeCloseTo(expected, 12);
    const breakdown = (r.info as { reward: Record<string, unknown> }).reward;
    for (const [k, v] of Object.entries(parts)) expect(breakdown[k], k).toBe(v);
    expect(r.done).toBe(true);
    expect(r.localRewards).toEqual({ helper: breakdown.auxDefined, main: breakdown.mainDefined });
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
});
