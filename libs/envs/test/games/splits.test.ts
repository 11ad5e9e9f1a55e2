import { stableHash } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  generatePlanPathTasks,
  generateSokobanTasks,
  generateSudokuTasks,
  sokobanKey,
  splitOfKey,
  sudokuSplitKey,
} from "../../src/games/index.ts";
import { SplitFractionsSchema, splitTaskGenerator } from "../../src/games/splits.ts";

const planPathKey = (p: { grid: readonly string[]; start: unknown; goal: unknown }) =>
  stableHash({ game: "plan-path", grid: p.grid, start: p.start, goal: p.goal });

describe("train / test splits are disjoint by canonical hash", () => {
  it("plan-path: 3000 train vs 600 test vs 300 validation instances share no hash", () => {
    const train = generatePlanPathTasks("train", 3000);
    const test = generatePlanPathTasks("test", 600);
    const validation = generatePlanPathTasks("validation", 300);
    const trainHashes = new Set(train.map((t) => planPathKey(t.payload)));
    expect(trainHashes.size).toBe(3000); // distinct within the split
    for (const t of [...test, ...validation]) expect(trainHashes.has(planPathKey(t.payload))).toBe(false);
    const testHashes = new Set(test.map((t) => planPathKey(t.payload)));
    for (const t of validation) expect(testHashes.has(planPathKey(t.payload))).toBe(false);
    // Each task sits in the bucket of its own hash.
    for (const t of test)
      expect(
        splitOfKey({ game: "plan-path", grid: t.payload.grid, start: t.payload.start, goal: t.payload.goal }),
      ).toBe("test");
    expect(new Set(test.map((t) => t.split))).toEqual(new Set(["test"]));
  });

  it("plan-path on a tiny space: train still never produces a reserved test instance", () => {
    // 3×3 grids with 1 wall: few enough instances that seed streams alone would collide.
    const opts = { rows: 3, cols: 3, blockedFraction: 0.12, minPathLength: 1 };
    const test = new Set(generatePlanPathTasks("test", 20, opts).map((t) => planPathKey(t.payload)));
    const train = generatePlanPathTasks("train", 200, { ...opts, seed: 99 });
    for (const t of train) expect(test.has(planPathKey(t.payload))).toBe(false);
    expect(() => generatePlanPathTasks("train", 600, opts)).toThrow(
      /instance space for these options is too small/,
    );
  });

  it("sudoku 4×4: 3000 train vs 400 test puzzles share no puzzle and no solution grid", () => {
    const train = generateSudokuTasks("train", 3000);
    const test = generateSudokuTasks("test", 400);
    const trainPuzzles = new Set(train.map((t) => stableHash(t.payload.givens)));
    const trainSolutions = new Set(train.map((t) => stableHash(sudokuSplitKey(4, t.payload.solution))));
    for (const t of test) {
      expect(trainPuzzles.has(stableHash(t.payload.givens))).toBe(false);
      expect(trainSolutions.has(stableHash(sudokuSplitKey(4, t.payload.solution)))).toBe(false);
    }
  });

  it("sokoban: 1500 train vs 200 test levels share no hash", () => {
    const train = new Set(generateSokobanTasks("train", 1500).map((t) => stableHash(sokobanKey(t.payload))));
    expect(train.size).toBe(1500);
    for (const t of generateSokobanTasks("test", 200))
      expect(train.has(stableHash(sokobanKey(t.payload)))).toBe(false);
  });

  it("bucket fractions: about 10% of keys are test, 10% validation", () => {
    const counts = { train: 0, validation: 0, test: 0 };
    for (let i = 0; i < 20_000; i++) counts[splitOfKey({ i })]++;
    expect(counts.test / 20_000).toBeCloseTo(0.1, 1);
    expect(counts.validation / 20_000).toBeCloseTo(0.1, 1);
    expect(splitOfKey({ i: 1 }, { test: 1, validation: 0 })).toBe("test");
    expect(splitOfKey({ i: 1 }, { test: 0, validation: 0 })).toBe("train");
  });

  it("splitTaskGenerator: parses the options first, draws again after a rejected draw, keys each instance", () => {
    const schema = z.object({
      top: z.number().int().min(1).default(1000),
      splitFractions: SplitFractionsSchema.default({ test: 0.1, validation: 0.1 }),
    });
    let rejected = 0;
    const generate = splitTaskGenerator(
      "numbers",
      schema,
      (rng, config) => {
        const n = rng.int(config.top);
        if (n % 2 === 1) rejected++;
        return n % 2 === 1 ? null : { n };
      },
      ({ n }) => ({ instanceKey: { n }, splitKey: { n } }),
    );
    const tasks = generate("test", 20, { seed: 5 });
    expect(tasks).toHaveLength(20);
    expect(rejected).toBeGreaterThan(0);
    for (const t of tasks) {
      expect(t.payload.n % 2).toBe(0);
      expect(splitOfKey({ n: t.payload.n })).toBe("test");
    }
    expect(new Set(tasks.map((t) => t.payload.n)).size).toBe(20);
    expect(() => generate("train", 1, { top: 0 })).toThrow(/^numbers generation options: top: /);
    expect(() => generate("train", 1, { other: 1 } as never)).toThrow(/^numbers generation options: /);
  });
});
