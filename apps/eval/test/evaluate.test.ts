/**
 * The evaluator's arithmetic: success by task difficulty (counts, Wilson intervals) from known
 * episodes, the t-interval over tasks, and the fraction of hidden tests a coding answer passed.
 */
import type { SolveAnswer } from "@troupe/teams";
import { describe, expect, it } from "vitest";
import { testFraction, tInterval } from "../src/evaluate.ts";
import { sixEpisodesByDifficulty } from "./fixtures.ts";

describe("success by difficulty", () => {
  const byDifficulty = sixEpisodesByDifficulty();

  it("counts each difficulty's tasks and successes, easiest first, with Wilson intervals", () => {
    expect(byDifficulty.map((d) => [d.difficulty, d.success.n, d.success.value])).toEqual([
      [3, 3, 2 / 3],
      [4, 1, 0], // not judged is not solved
      [5, 2, 0.5],
    ]);
    // Wilson 95% for 2/3: [0.2077, 0.9385].
    expect(byDifficulty[0]!.success.low).toBeCloseTo(0.2077, 4);
    expect(byDifficulty[0]!.success.high).toBeCloseTo(0.9385, 4);
    expect(byDifficulty.every((d) => d.success.method === "wilson")).toBe(true);
  });
});

describe("tInterval", () => {
  it("the mean over tasks with a 95% t-interval clipped to the bounds; one task: the point", () => {
    // Mean 0.5, sample sd √(0.02 / 3) = 0.08165, n 4: half-width t(0.975, 3) · sd / √4 = 3.182 · 0.04082 = 0.1299.
    const e = tInterval([0.4, 0.5, 0.6, 0.5], [0, 1]);
    expect(e.value).toBeCloseTo(0.5, 12);
    expect(e.n).toBe(4);
    expect(e.method).toBe("t");
    expect(e.low).toBeCloseTo(0.5 - 0.1299, 3);
    expect(e.high).toBeCloseTo(0.5 + 0.1299, 3);
    expect(tInterval([0.9, 1, 1], [0, 1]).high).toBe(1); // clipped to the bounds
    expect(tInterval([0.25], [0, 1])).toEqual({ value: 0.25, low: 0.25, high: 0.25, n: 1, method: "t" });
  });
});

describe("testFraction", () => {
  const code = (tests: { passed: number; total: number } | null): SolveAnswer => ({
    kind: "code",
    entryPoint: "f",
    program: "",
    parts: {},
    tests: tests && { ...tests, cases: [] },
    turns: 1,
  });

  it("a coding answer's passed / total hidden tests; no program or no tests: 0; other answers: undefined", () => {
    expect(testFraction(code({ passed: 3, total: 4 }))).toBe(0.75);
    expect(testFraction(code({ passed: 0, total: 0 }))).toBe(0);
    expect(testFraction(code(null))).toBe(0);
    expect(testFraction({ kind: "state", state: {} })).toBeUndefined();
  });
});
