/**
 * A Plan-Path puzzle and the agent's place on it: what the game (plan-path.ts) and its tool
 * (plan-path-tool-call.ts) both read, in a module of its own so that neither imports the other.
 */
import type { Pos } from "./grid.ts";

export interface PlanPathPuzzle {
  readonly rows: number;
  readonly cols: number;
  /** One string per row: `#` blocked, `.` free. */
  readonly grid: readonly string[];
  readonly start: Pos;
  readonly goal: Pos;
  /** BFS shortest path length from start to goal. */
  readonly optimal: number;
}

export interface PlanPathBoard {
  readonly pos: Pos;
}
