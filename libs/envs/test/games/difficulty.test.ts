/**
 * The games' task difficulty (`Environment.difficulty`), used by success-by-difficulty reports:
 * the length of an optimal plan from the start.
 */
import { describe, expect, it } from "vitest";
import { createEnvironment } from "../../src/index.ts";

describe("game difficulty", () => {
  it("Plan-Path and Sokoban: the optimal plan's length stored with the puzzle", () => {
    for (const name of ["plan-path", "sokoban"] as const) {
      const { env, generateTasks } = createEnvironment(name, {});
      const tasks = generateTasks("test", 20, 0);
      expect(tasks.map((t) => env.difficulty!(t))).toEqual(
        tasks.map((t) => (t.payload as { optimal: number }).optimal),
      );
    }
  });

  it("Plan-Path: every generated length between the options' bounds, as the generator promises", () => {
    const { env, generateTasks } = createEnvironment("plan-path", { minPathLength: 3, maxPathLength: 5 });
    const lengths = new Set(generateTasks("test", 60, 0).map((t) => env.difficulty!(t)));
    expect([...lengths].sort()).toEqual([3, 4, 5]);
  });

  it("Sudoku: the cells left to fill", () => {
    const { env, generateTasks } = createEnvironment("sudoku", {});
    for (const task of generateTasks("test", 10, 0)) {
      const blanks = (task.payload as { givens: number[] }).givens.filter((v) => v === 0).length;
      expect(env.difficulty!(task)).toBe(blanks);
      expect(blanks).toBeGreaterThan(0);
    }
  });
});
