/**
 * Every environment declares the largest task it accepts, and a given task (what the API's
 * `input.task` hands to `reset`) above it is refused naming the field, before any work that grows
 * with its size; a task at the limit is accepted.
 */
import type { Task } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { CODING_MAX_PROMPT_CHARS, HumanEvalRowSchema } from "../../src/coding/dataset.ts";
import {
  generatePlanPathTasks,
  generateSokobanTasks,
  generateSudokuTasks,
  PLAN_PATH_MAX_SIZE,
  planPathEnv,
  SOKOBAN_MAX_BOXES,
  SOKOBAN_MAX_SIZE,
  SUDOKU_MAX_CELLS,
  sokobanEnv,
  sudokuEnv,
} from "../../src/games/index.ts";
import { Gsm8kRowSchema, MATH_MAX_QUESTION_CHARS } from "../../src/math/dataset.ts";
import { thrownMessage } from "./expect.ts";

const task = (payload: unknown): Task<never> => ({ id: "t", split: "test", payload: payload as never });
const refusal = (reset: () => unknown) => thrownMessage(reset, "accepted");

/** An open rows×cols Plan-Path grid, start top-left, goal bottom-right. */
const openGrid = (rows: number, cols: number) => ({
  rows,
  cols,
  grid: Array.from({ length: rows }, () => ".".repeat(cols)),
  start: [0, 0],
  goal: [rows - 1, cols - 1],
  optimal: rows + cols - 2,
});

describe("task limits", () => {
  it("Plan-Path: 32×32 at most, rows and columns; the 50×150 and 60×1000 attacks are refused by field", () => {
    expect(PLAN_PATH_MAX_SIZE).toBe(32);
    const env = planPathEnv({ rows: 6, cols: 6 });
    expect(refusal(() => env.reset(task(openGrid(32, 32)), 0))).toBe("accepted");
    expect(refusal(() => env.reset(task(openGrid(50, 150)), 0))).toBe(
      "plan-path task t: payload: rows: at most 32: the largest grid Plan-Path accepts is 32×32",
    );
    expect(refusal(() => env.reset(task(openGrid(60, 1000)), 0))).toBe(
      "plan-path task t: payload: rows: at most 32: the largest grid Plan-Path accepts is 32×32",
    );
    expect(refusal(() => env.reset(task(openGrid(4, 33)), 0))).toBe(
      "plan-path task t: payload: cols: at most 32: the largest grid Plan-Path accepts is 32×32",
    );
    // A payload whose rows/cols claim a small grid but whose rows are long is refused on the row.
    const lying = { ...openGrid(4, 4), grid: ["....", ".".repeat(5000), "....", "...."] };
    expect(refusal(() => env.reset(task(lying), 0))).toBe(
      "plan-path task t: payload: grid.1: a grid row has at most 32 cells",
    );
    // Generation has the same bound.
    expect(() => generatePlanPathTasks("test", 1, { rows: 33 })).toThrow(/rows/);
  });

  it("Sokoban: 10×10 and 2 boxes at most", () => {
    expect([SOKOBAN_MAX_SIZE, SOKOBAN_MAX_BOXES]).toEqual([10, 2]);
    const env = sokobanEnv();
    const [largest] = generateSokobanTasks("test", 1, { rows: 10, cols: 10, boxes: 2, seed: 1 });
    expect(refusal(() => env.reset(largest!, 0))).toBe("accepted");
    const p = largest!.payload;
    const taller = { ...p, rows: 11, walls: [...p.walls, "#".repeat(10)] };
    expect(refusal(() => env.reset(task(taller), 0))).toBe(
      "sokoban task t: payload: rows: at most 10: the largest board Sokoban accepts is 10×10",
    );
    const threeBoxes = { ...p, boxes: [...p.boxes, p.player], targets: [...p.targets, p.player] };
    expect(refusal(() => env.reset(task(threeBoxes), 0))).toBe(
      "sokoban task t: payload: targets: at most 2 targets",
    );
  });

  it("Sudoku: 9×9 (81 cells) at most", () => {
    expect(SUDOKU_MAX_CELLS).toBe(81);
    const env = sudokuEnv({ size: 9 });
    const [largest] = generateSudokuTasks("test", 1, { size: 9, seed: 1 });
    expect(refusal(() => env.reset(largest!, 0))).toBe("accepted");
    const huge = { ...largest!.payload, givens: new Array(100_000).fill(0) };
    expect(refusal(() => env.reset(task(huge), 0))).toBe("sudoku task t: payload: givens: at most 81 cells");
  });

  it("text datasets: the largest prompt and question a row may hold", () => {
    const row = { task_id: "x", canonical_solution: "", test: "def check(c): pass", entry_point: "f" };
    expect(
      HumanEvalRowSchema.safeParse({ ...row, prompt: "p".repeat(CODING_MAX_PROMPT_CHARS) }).success,
    ).toBe(true);
    const big = HumanEvalRowSchema.safeParse({ ...row, prompt: "p".repeat(CODING_MAX_PROMPT_CHARS + 1) });
    expect(big.error?.issues[0]?.path).toEqual(["prompt"]);
    const question = Gsm8kRowSchema.safeParse({
      question: "q".repeat(MATH_MAX_QUESTION_CHARS + 1),
      answer: "#### 1",
    });
    expect(question.error?.issues[0]?.path).toEqual(["question"]);
  });
});
