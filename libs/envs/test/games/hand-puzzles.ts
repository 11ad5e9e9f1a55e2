/** Hand-made Sokoban and Sudoku puzzles that several tests read (Plan-Path's is hand-4x4.ts). */
import type { SokobanPuzzle, SudokuPuzzle } from "../../src/games/index.ts";

/**
 * One box, 6×6 room (the generator's default size):
 *   ######
 *   #@___#     player (1,1)
 *   #_$_##     box (2,2)
 *   #__._#     target (3,3)
 *   ##___#
 *   ######
 * Optimal: 5 moves (DRURD or RDLDR: one push right, one push down, three steps to get behind).
 */
export const oneBox: SokobanPuzzle = {
  rows: 6,
  cols: 6,
  walls: ["######", "#____#", "#___##", "#____#", "##___#", "######"],
  targets: [[3, 3]],
  boxes: [[2, 2]],
  player: [1, 1],
  optimal: 5,
};

/**
 * Solution      Givens (8 blanks → each fill earns 0.5 / 8 = 0.0625)
 *   1 2 3 4       1 . . 4
 *   3 4 1 2       . 4 1 .
 *   2 1 4 3       2 . . 3
 *   4 3 2 1       . 3 2 .
 */
const solution = [1, 2, 3, 4, 3, 4, 1, 2, 2, 1, 4, 3, 4, 3, 2, 1];
export const puzzle: SudokuPuzzle = {
  size: 4,
  boxRows: 2,
  boxCols: 2,
  givens: [1, 0, 0, 4, 0, 4, 1, 0, 2, 0, 0, 3, 0, 3, 2, 0],
  solution,
};
