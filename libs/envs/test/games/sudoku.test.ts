import { deepFreeze, Rng, stableHash, type Task } from "@troupe/core";
import { describe, expect, it } from "vitest";
import {
  countSudokuSolutions,
  generateSudokuTasks,
  parseSudokuPlan,
  randomSudokuGrid,
  type SudokuPuzzle,
  sudokuDemo,
  sudokuEnv,
  sudokuShape,
} from "../../src/games/index.ts";
import { puzzle } from "./hand-puzzles.ts";
import { stepSync } from "./step-sync.ts";

const task: Task<SudokuPuzzle> = { id: "hand-4x4", split: "test", payload: puzzle };

/** Independent brute force: completions of a 4×4 grid, trying every value in every empty cell. */
function bruteForceCount(cells: readonly number[]): number {
  const i = cells.indexOf(0);
  if (i < 0) return 1;
  const r = Math.floor(i / 4);
  const c = i % 4;
  let total = 0;
  for (let v = 1; v <= 4; v++) {
    let clash = false;
    for (let k = 0; k < 16; k++) {
      const kr = Math.floor(k / 4);
      const kc = k % 4;
      const sameBox = Math.floor(kr / 2) === Math.floor(r / 2) && Math.floor(kc / 2) === Math.floor(c / 2);
      if (cells[k] === v && (kr === r || kc === c || sameBox)) clash = true;
    }
    if (!clash) total += bruteForceCount(cells.map((x, k) => (k === i ? v : x)));
  }
  return total;
}

describe("sudoku rewards on a hand-made 4×4", () => {
  const env = sudokuEnv();

  it("has a unique solution (two independent counters)", () => {
    expect(bruteForceCount(puzzle.givens)).toBe(1);
    expect(countSudokuSolutions(sudokuShape(4), puzzle.givens)).toBe(1);
  });

  it("full solve: 8 fills · 0.0625 + solved 1 = 1.5", () => {
    const r = stepSync(env, env.reset(task, 0), { planner: "012 023 103 132 211 224 304 331" });
    expect(r.teamReward).toBeCloseTo(1.5, 12);
    expect(r.localRewards).toEqual({ planner: 1 });
    expect(r.success).toBe(true);
  });

  it("a valid fill then a conflict: 0.0625 − 0.1; local 1/8 − 0.1", () => {
    const r = stepSync(env, env.reset(task, 0), { planner: "012 021" });
    expect(r.teamReward).toBeCloseTo(0.0625 - 0.1, 12);
    expect(r.localRewards.planner).toBeCloseTo(1 / 8 - 0.1, 12);
    expect(r.state.report).toBe("012 021: conflict at step 2 (0,2)=1");
    expect(r.state.board.cells[1]).toBe(2);
  });

  it("a fill earns 0.0625, erasing it gives it back, rewriting a filled cell earns nothing", () => {
    const s0 = env.reset(task, 0);
    const fill = stepSync(env, s0, { planner: "132" });
    expect(fill.teamReward).toBeCloseTo(0.0625, 12);
    const erase = stepSync(env, fill.state, { fixer: "130" });
    expect(erase.teamReward).toBeCloseTo(-0.0625, 12);
    expect(erase.localRewards.fixer).toBeCloseTo(-1 / 7, 12); // h: 7 → 8
    const overwrite = stepSync(env, { ...fill.state, turn: 0 }, { planner: "132" });
    expect(overwrite.teamReward).toBe(0); // writing the same cell again: no new filled cell
  });

  it("a consistent but wrong value earns nothing; replacing it with the solution value earns the fill", () => {
    const loose: SudokuPuzzle = { ...puzzle, givens: [1, ...new Array(15).fill(0)] };
    const t: Task<SudokuPuzzle> = { id: "loose", split: "test", payload: loose };
    const s0 = env.reset(t, 0);
    const fill = 0.5 / 15;
    const wrong = stepSync(env, s0, { planner: "013" }); // the solution has 2 at (0,1)
    expect(wrong.teamReward).toBe(0);
    expect(wrong.state.board.cells[1]).toBe(3);
    const right = stepSync(env, { ...wrong.state, turn: 0 }, { planner: "012" }); // overwrite 3 → 2
    expect(right.teamReward).toBeCloseTo(fill, 12);
    const spoil = stepSync(env, { ...right.state, turn: 0 }, { planner: "013" }); // 2 → 3 again
    expect(spoil.teamReward).toBeCloseTo(-fill, 12);
    const erase = stepSync(env, { ...wrong.state, turn: 0 }, { planner: "010" }); // erasing the wrong 3
    expect(erase.teamReward).toBe(0);
  });

  it("givens, erasing an empty cell, out-of-range values and unreadable plans are invalid (−0.1)", () => {
    const s0 = env.reset(task, 0);
    expect(stepSync(env, s0, { planner: "001" }).state.report).toBe("001: given cell at step 1 (0,0)=1");
    expect(stepSync(env, s0, { planner: "010" }).state.report).toBe("010: already empty at step 1 (0,1)=0");
    expect(stepSync(env, s0, { planner: "015" }).state.report).toBe("015: out of range at step 1 (0,1)=5");
    const bad = stepSync(env, s0, { planner: "01" });
    expect(bad.teamReward).toBeCloseTo(-0.1, 12);
    expect(bad.state.report).toBe("unreadable plan");
  });

  it("the demo erases wrong values first, then fills", () => {
    // A wrong but consistent value needs a cell with two candidates: on an empty grid (1 given) any works.
    const loose: SudokuPuzzle = { ...puzzle, givens: [1, ...new Array(15).fill(0)] };
    const t: Task<SudokuPuzzle> = { id: "loose", split: "test", payload: loose };
    const s0 = env.reset(t, 0);
    const wrong = stepSync(env, s0, { planner: "013" }); // solution has 2 at (0,1)
    const demo = sudokuDemo(t, wrong.state, "fixer");
    expect(demo.startsWith("010 012 ")).toBe(true);
    expect(stepSync(env, wrong.state, { fixer: demo }).success).toBe(true);
  });

  it("parses rcv triples with or without separators", () => {
    expect(parseSudokuPlan("012 103")).toEqual([
      { row: 0, col: 1, value: 2 },
      { row: 1, col: 0, value: 3 },
    ]);
    expect(parseSudokuPlan("#### 012,103")).toHaveLength(2);
    expect(parseSudokuPlan("012103")).toHaveLength(2);
    expect(parseSudokuPlan("0121")).toBeNull();
    expect(parseSudokuPlan("r0c1=2")).toBeNull();
  });

  it("renders rows of digits with '.' for blanks", () => {
    expect(env.observe(env.reset(task, 0), "planner").messages[0]!.content).toBe(
      "sudoku planner\n1..4\n.41.\n2..3\n.32.\nplan:",
    );
  });

  it("stepping a deep-frozen state works and leaves it unchanged", () => {
    const s0 = deepFreeze(env.reset(task, 0));
    const before = stableHash(s0);
    const r = stepSync(env, s0, { planner: "012 023" });
    expect(stableHash(s0)).toBe(before);
    expect(r.state.board.cells.slice(0, 4)).toEqual([1, 2, 3, 4]);
  });
});

describe("sudoku generation", () => {
  it("there are exactly 288 4×4 grids, and random grids are valid", () => {
    expect(countSudokuSolutions(sudokuShape(4), new Array(16).fill(0), 1000)).toBe(288);
    const grid = randomSudokuGrid(new Rng(1), 9);
    expect(countSudokuSolutions(sudokuShape(9), grid)).toBe(1);
  });

  it("4×4 puzzles: unique solution (brute force), givens agree with it, 6 givens, demo solves", () => {
    const env = sudokuEnv();
    for (const t of generateSudokuTasks("train", 300, { seed: 11 })) {
      const p = t.payload;
      expect(bruteForceCount(p.givens)).toBe(1);
      expect(p.givens.every((v, i) => v === 0 || v === p.solution[i])).toBe(true);
      expect(p.givens.filter((v) => v !== 0)).toHaveLength(6);
      const s0 = env.reset(t, 0);
      expect(stepSync(env, s0, { planner: sudokuDemo(t, s0, "planner") }).teamReward).toBeCloseTo(1.5, 12);
    }
  });

  it("9×9 and 6×6 puzzles have a unique solution", () => {
    for (const size of [6, 9] as const) {
      for (const t of generateSudokuTasks("train", 6, { size, seed: 2 })) {
        const p = t.payload;
        expect(countSudokuSolutions(sudokuShape(size), p.givens)).toBe(1);
        expect(countSudokuSolutions(sudokuShape(size), p.solution)).toBe(1);
        expect(p.givens.every((v, i) => v === 0 || v === p.solution[i])).toBe(true);
      }
    }
  });

  it("rejects bad payloads with the field named", () => {
    const env = sudokuEnv();
    expect(() =>
      env.reset({ ...task, payload: { ...puzzle, givens: [2, ...puzzle.givens.slice(1)] } }, 0),
    ).toThrow(/givens\[0\] disagrees/);
    expect(() => env.reset({ ...task, payload: { ...puzzle, givens: [1] } }, 0)).toThrow(
      /payload: givens: needs 16 cells/,
    );
  });
});
