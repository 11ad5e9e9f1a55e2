/** The helper + main environment: turns, feedback, frozen states, reward bounds, its options. */
import { deepFreeze, Rng } from "@troupe/core";
import { expect, it } from "vitest";
import {
  auxMainEnv,
  type CodingReward,
  codingTasks,
  loadHumanEval,
  passFailFeedback,
} from "../../src/coding/index.ts";
import { py, doubleSumTask as task } from "./fixtures.ts";
import { testRunner } from "./local-python-runner.ts";

const { runner } = await testRunner();

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

it("rejects a bad reward name in one line", () => {
  expect(() => auxMainEnv({ runner, reward: "strcit" as CodingReward })).toThrow(
    'auxMainEnv: reward must be "strict" or "paper", got "strcit"',
  );
});
