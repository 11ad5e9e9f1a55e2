import { deepFreeze, Rng, type Task } from "@troupe/core";
import { describe, expect, it } from "vitest";
import {
  AUX_MAIN_REWARD_TIERS,
  auxMainEnv,
  type CodingProblem,
  codingTasks,
  loadHumanEval,
  passFailFeedback,
} from "../../src/coding/index.ts";
import { doubleSum, py } from "./fixtures.ts";
import { testRunner } from "./local-python-runner.ts";

const { runner } = await testRunner();

const task: Task<CodingProblem> = { id: doubleSum.taskId, split: "test", payload: doubleSum };

/** CoMLRL's tiers as published: `reward: "paper"` (the strict default is tested in strict-rewards.test.ts). */
async function reward(helper: string, main: string) {
  const env = auxMainEnv({ runner, reward: "paper" });
  const state = deepFreeze(await env.reset(task, 0));
  const r = await env.step(state, { helper: py(helper), main: py(main) });
  return r;
}

describe("helper + main tiered reward (CoMLRL)", () => {
  it("keeps the tier table in one constant", () => {
    expect(AUX_MAIN_REWARD_TIERS).toEqual({
      auxDefined: 0.4,
      mainDefined: 0.6,
      syntax: 0.5,
      tests: 1.0,
      auxUsed: 0.5,
      notWrapper: 1.0,
      ignoredAuxResult: -0.5,
      max: 4.0,
    });
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

describe("helper + main environment", () => {
  it("runs several turns with feedback, never mutating the (frozen) state", async () => {
    const env = auxMainEnv({ runner, maxTurns: 2, feedback: passFailFeedback() });
    const s0 = deepFreeze(await env.reset(task, 0));
    const first = await env.step(s0, {
      helper: py("def aux(xs):\n    return 0"),
      main: py("def double_sum(xs):\n    return 1"),
    });
    expect(first.done).toBe(false);
    expect(first.success).toBe(false);
    expect(s0.attempts).toEqual([]);
    const obs = env.observe(deepFreeze(first.state), "main").messages.at(-1)!.content;
    expect(obs).toContain("Your team's last attempt failed the tests.");
    expect(obs).toContain("Turn 2 of 2");
    const second = await env.step(first.state, {
      helper: py("def aux(xs):\n    return sum(xs)"),
      main: py("def double_sum(xs):\n    return 2 * aux(xs)"),
    });
    expect(second.done).toBe(true);
    expect(second.success).toBe(true);
    // `return 2 * aux(xs)` is one return statement calling aux, a trivial wrapper by CoMLRL's text
    // rule; `strict` (the default) judges by what runs: main's answer is twice aux's, not aux's.
    expect(second.teamReward).toBeCloseTo(4.0, 12);
    await expect(env.step(second.state, {})).rejects.toThrow(/finished episode/);
  });

  it("random policy over many HumanEval tasks: no exceptions, rewards within bounds", async () => {
    const env = auxMainEnv({ runner, harness: { perTestTimeoutMs: 500 } });
    const tasks = codingTasks(await loadHumanEval()).train.slice(0, 12);
    const rng = new Rng(7);
    const pieces = [
      "",
      "garbage ((",
      py("def aux(x):\n    return x"),
      py("def aux(*a):\n    pass"),
      "def aux(x):\n    return [x]\n",
      py("import os\nos._exit(0)"),
      py("print('x' * 100)"),
    ];
    for (const t of tasks) {
      const p = t.payload;
      const mains = [
        ...pieces,
        py(`def ${p.entryPoint}(*args):\n    return aux(*args)`),
        py(`${p.prompt}${p.canonicalSolution}`),
        py(`def ${p.entryPoint}(*args):\n    while True:\n        pass\n    return 1`),
      ];
      const s = deepFreeze(await env.reset(t, 0));
      const r = await env.step(s, { helper: rng.pick(pieces), main: rng.pick(mains) });
      const [lo, hi] = env.rewardBounds!.team;
      expect(r.teamReward).toBeGreaterThanOrEqual(lo);
      expect(r.teamReward).toBeLessThanOrEqual(hi);
      for (const v of Object.values(r.localRewards)) {
        expect(v).toBeGreaterThanOrEqual(env.rewardBounds!.local[0]);
        expect(v).toBeLessThanOrEqual(env.rewardBounds!.local[1]);
      }
    }
  }, 60_000);
});
