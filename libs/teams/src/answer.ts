/**
 * The `answer` of a solve: the episode's outcome in a form a page can show. For the grid games it
 * is the final board (one row per line, as the agents saw it) and what was executed; Plan-Path
 * also gives the path cell by cell, replayed from the plans the environment reports as executed.
 * Other environments get their final state as plain data.
 */
import type { AgentId } from "@troupe/core";
import {
  type GameState,
  type PlanPathBoard,
  type PlanPathPuzzle,
  type Pos,
  parseDirections,
  renderPlanPath,
  renderSokoban,
  renderSudoku,
  type SokobanBoard,
  type SokobanPuzzle,
  type SudokuBoard,
  type SudokuPuzzle,
  samePos,
  step,
} from "@troupe/envs/games";

/** One agent's action and what the environment said about it (StepResult.info[agent]). */
export interface ExecutedAction {
  readonly agent: AgentId;
  readonly text: string;
  readonly info: unknown;
}

export interface PlanPathAnswer {
  readonly kind: "plan-path";
  /** The final board: `#` blocked, `.` free, `A` the agent, `G` the goal. */
  readonly grid: string[];
  readonly start: Pos;
  readonly goal: Pos;
  readonly position: Pos;
  /** Cells visited from the start, in order (the start included). */
  readonly path: Pos[];
  /** The executed moves, e.g. "RRDD". */
  readonly moves: string;
  readonly optimal: number;
  readonly report: string | null;
}

export interface BoardAnswer {
  readonly kind: "sokoban" | "sudoku";
  readonly board: string[];
  readonly movesTaken: number;
  readonly report: string | null;
}

export interface StateAnswer {
  readonly kind: "state";
  readonly state: unknown;
}

export type SolveAnswer = PlanPathAnswer | BoardAnswer | StateAnswer;

export function renderAnswer(
  envName: string,
  state: unknown,
  actions: readonly ExecutedAction[],
): SolveAnswer {
  switch (envName) {
    case "plan-path":
      return planPathAnswer(state as GameState<PlanPathPuzzle, PlanPathBoard>, actions);
    case "sokoban": {
      const s = state as GameState<SokobanPuzzle, SokobanBoard>;
      return boardAnswer("sokoban", renderSokoban(s.puzzle, s.board), s);
    }
    case "sudoku": {
      const s = state as GameState<SudokuPuzzle, SudokuBoard>;
      return boardAnswer("sudoku", renderSudoku(s.puzzle, s.board), s);
    }
    default:
      return { kind: "state", state };
  }
}

function boardAnswer(
  kind: "sokoban" | "sudoku",
  text: string,
  state: GameState<unknown, unknown>,
): BoardAnswer {
  return { kind, board: text.split("\n"), movesTaken: state.movesTaken, report: state.report };
}

function planPathAnswer(
  state: GameState<PlanPathPuzzle, PlanPathBoard>,
  actions: readonly ExecutedAction[],
): PlanPathAnswer {
  const { puzzle, board } = state;
  // Replay: each plan's first `executed` moves were applied (the environment stops at the first
  // invalid move and at the goal), from where the previous plan left the agent.
  const path: Pos[] = [puzzle.start];
  let moves = "";
  for (const action of actions) {
    const executed = (action.info as { executed?: unknown } | undefined)?.executed;
    if (typeof executed !== "number" || executed === 0) continue;
    const plan = parseDirections(action.text) ?? [];
    for (const move of plan.slice(0, executed)) {
      path.push(step(path.at(-1)!, move));
      moves += move;
    }
  }
  const consistent = samePos(path.at(-1)!, board.pos) && moves.length === state.movesTaken;
  return {
    kind: "plan-path",
    grid: renderPlanPath(puzzle, board).split("\n"),
    start: puzzle.start,
    goal: puzzle.goal,
    position: board.pos,
    // The replay mirrors the environment's rules; if it ever disagrees, show only the end point.
    path: consistent ? path : [board.pos],
    moves: consistent ? moves : "",
    optimal: puzzle.optimal,
    report: state.report,
  };
}
