/**
 * Plan-Path's environment-provided tool, for the `tool-call` roles: instead of writing a program,
 * the tool agent answers one short command and the environment runs it.
 *
 *   path R C    a shortest path over free cells from the agent's cell to row R, column C
 *               (0-based, row 0 at the top), as the moves of a plan, e.g. `RRDD`
 *
 * The grammar is strict: after trimming the text's ends, exactly `path`, a space, R, a space, C,
 * with R and C decimal numbers without leading zeros. What the plan agent reads (`output`):
 *   `RRDD`                                a path to (R, C): ties broken in U, D, L, R order, so
 *                                         a call on the goal gives the solver's plan
 *   `no path`                             (R, C) is free but walls cut it off from the agent
 *   `bad command: expected "path R C"`    anything else
 *   `bad command: R C is off the board`   R ≥ rows or C ≥ cols
 *   `bad command: R C is a wall`
 *   `bad command: R C is the agent's cell`
 * A call on a cell other than the goal gives a real path to that cell: the tool is only as good as
 * the coordinates it is given.
 */
import { type CellCommand, cellCommandTool, type GameToolCall, parseCellCommand } from "./game.ts";
import { bfsDistances, type Direction, descendPath, samePos } from "./grid.ts";
import type { PlanPathBoard, PlanPathPuzzle } from "./plan-path-puzzle.ts";

export type PathCommand = CellCommand;

/** The tool agent's text as a `path R C` command, or why it is not one. */
export const parsePathCommand = (text: string): PathCommand => parseCellCommand("path", text);

const isFree = (puzzle: PlanPathPuzzle) => (r: number, c: number) => puzzle.grid[r]![c] === ".";

/** Runs one tool command from the agent's cell (see the file comment for every outcome). */
export const runPathCommand = cellCommandTool<PlanPathPuzzle, PlanPathBoard, Direction>(
  "path",
  (puzzle, board, r, c) =>
    !isFree(puzzle)(r, c) ? "is a wall" : samePos(board.pos, [r, c]) ? "is the agent's cell" : undefined,
  (puzzle, board, target) =>
    descendPath(
      puzzle.rows,
      puzzle.cols,
      bfsDistances(puzzle.rows, puzzle.cols, isFree(puzzle), target),
      board.pos,
    ),
);

/** The tool of the `tool-call` roles; its demonstration is a call on the goal. */
export const planPathToolCall: GameToolCall<PlanPathPuzzle, PlanPathBoard, Direction> = {
  run: runPathCommand,
  demo: (puzzle) => `path ${puzzle.goal[0]} ${puzzle.goal[1]}`,
};
