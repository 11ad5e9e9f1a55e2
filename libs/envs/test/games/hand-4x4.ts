/**
 * The hand-made 4×4 Plan-Path instance the plan-path tests share (scale = max(4, 4) = 4, γ = 1):
 *   A . # .        BFS distances to the goal:   6 7 # 5
 *   . # . .                                     5 # 3 4
 *   . . . #                                     4 3 2 #
 *   # . . G                                     # 2 1 0
 * Two optimal paths of 6 moves, DDRRDR and DDRDRR; the solver breaks ties in U, D, L, R order and
 * answers DDRDRR.
 */
import type { Task } from "@troupe/core";
import type { PlanPathPuzzle } from "../../src/games/index.ts";

export const puzzle: PlanPathPuzzle = {
  rows: 4,
  cols: 4,
  grid: ["..#.", ".#..", "...#", "#..."],
  start: [0, 0],
  goal: [3, 3],
  optimal: 6,
};
export const task: Task<PlanPathPuzzle> = { id: "hand-4x4", split: "test", payload: puzzle };
