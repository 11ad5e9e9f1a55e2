/**
 * Plan-Path: move an agent across a grid with blocked cells to a goal, with actions U/D/L/R.
 *
 * Generation: a rows×cols grid with round(blockedFraction·rows·cols) blocked cells at random
 * places; a start among the free cells; a goal among the free cells reachable from the start at
 * BFS distance ≥ minPathLength. Every instance is therefore solvable, and BFS gives its optimal
 * path length.
 *
 * Team reward per step, as in the Stronger-MAS (AT-GRPO) Plan-Path setup, plus potential-based
 * shaping (Ng, Harada & Russell 1999), which leaves the optimal policy unchanged:
 *   each executed move            step = −0.01
 *   invalid move (wall / off grid / unreadable plan; the plan stops there)   invalid = −0.1
 *   reaching the goal             goal = +1, and optimalBonus = +0.5 more if the episode's moves = BFS optimum
 *   episode ends without the goal failure = −1
 *   each executed move s → s'     F = γ·Φ(s') − Φ(s),  Φ(s) = −d(s) / scale
 * with d(s) = BFS distance from s to the goal, γ = shapingGamma (default 1: GRPO-style returns are
 * undiscounted, and with γ = 1 the shaping telescopes to (d(start) − d(end)) / scale, so it changes
 * no comparison between complete episodes) and scale = shapingScale (default max(rows, cols), the
 * grid size: one step closer earns +1/10 on the default 10×10 grid, so moving closer nets +0.09 and
 * moving away −0.11).
 */
import type { Rng, Task } from "@troupe/core";
import { z } from "zod";
import type { GameEnvironment, GameState, RolesVariant } from "./episode.ts";
import type { CompactHint, Game, GameRewards } from "./game.ts";
import { gameModule, gameOptionsSchema } from "./game-module.ts";
import {
  bfsDistances,
  DIRECTIONS,
  type Direction,
  descendPath,
  formatPos,
  type Pos,
  parseDirections,
  samePos,
  step,
} from "./grid.ts";
import { gridPayloadSchema, PLAN_PATH_CELLS, PosSchema } from "./grid-payload.ts";
import type { PlanPathBoard, PlanPathPuzzle } from "./plan-path-puzzle.ts";
import { planPathToolCall } from "./plan-path-tool-call.ts";
import { SplitFractionsSchema, splitTaskGenerator } from "./splits.ts";

export const PLAN_PATH = "plan-path";

/**
 * The largest Plan-Path grid, in rows and in columns: generated tasks and tasks given by users
 * (the API's `input.task`) alike. It bounds what one episode costs: the BFS, and the prompt, which
 * shows every cell (a 32×32 grid is about 1,100 characters).
 */
export const PLAN_PATH_MAX_SIZE = 32;

export const PlanPathGenerationSchema = z.object({
  rows: z.number().int().min(2).max(PLAN_PATH_MAX_SIZE).default(10),
  cols: z.number().int().min(2).max(PLAN_PATH_MAX_SIZE).default(10),
  /** Share of cells blocked (rounded to a whole number of cells). */
  blockedFraction: z.number().min(0).max(0.7).default(0.22),
  /** Smallest BFS distance from start to goal. */
  minPathLength: z.number().int().min(1).default(4),
  /**
   * Largest BFS distance from start to goal (none when absent): a set of short mazes, e.g. the
   * easy demonstrations of a warm start whose team then trains on every length.
   */
  maxPathLength: z.number().int().min(1).optional(),
  splitFractions: SplitFractionsSchema.default({ test: 0.1, validation: 0.1 }),
});
export type PlanPathGeneration = z.output<typeof PlanPathGenerationSchema>;

export const PlanPathRewardsSchema = z.object({
  step: z.number().default(-0.01),
  invalid: z.number().default(-0.1),
  goal: z.number().default(1),
  optimalBonus: z.number().default(0.5),
  failure: z.number().default(-1),
  shapingGamma: z.number().min(0).max(1).default(1),
  /** Divisor of the BFS distance in Φ; default max(rows, cols) of the puzzle. */
  shapingScale: z.number().positive().optional(),
});
export type PlanPathRewards = z.output<typeof PlanPathRewardsSchema>;

export const PlanPathOptionsSchema = gameOptionsSchema(PlanPathGenerationSchema, PlanPathRewardsSchema);
export type PlanPathOptions = z.input<typeof PlanPathOptionsSchema>;

// ---------------------------------------------------------------------------------------------
// Puzzle

const isOpen = (puzzle: Pick<PlanPathPuzzle, "grid">) => (r: number, c: number) => puzzle.grid[r]![c] === ".";

const distanceCache = new WeakMap<PlanPathPuzzle, Int32Array>();

/** BFS distance of every cell to the goal (-1 = unreachable); cached per puzzle object. */
export function distancesToGoal(puzzle: PlanPathPuzzle): Int32Array {
  let dist = distanceCache.get(puzzle);
  if (dist === undefined) {
    dist = bfsDistances(puzzle.rows, puzzle.cols, isOpen(puzzle), puzzle.goal);
    distanceCache.set(puzzle, dist);
  }
  return dist;
}

function distanceToGoal(puzzle: PlanPathPuzzle, pos: Pos): number {
  const d = distancesToGoal(puzzle)[pos[0] * puzzle.cols + pos[1]]!;
  return d < 0 ? Number.POSITIVE_INFINITY : d;
}

/** A shortest path from `from` to the goal (ties broken in U, D, L, R order), or null. */
export function shortestPlanPath(puzzle: PlanPathPuzzle, from: Pos): Direction[] | null {
  return descendPath(puzzle.rows, puzzle.cols, distancesToGoal(puzzle), from);
}

/** One random instance (null when the draw has no goal far enough from the start). */
export function generatePlanPathPuzzle(rng: Rng, config: PlanPathGeneration): PlanPathPuzzle | null {
  const { rows, cols } = config;
  const cells = rows * cols;
  const blocked = new Set(
    rng.shuffled([...Array(cells).keys()]).slice(0, Math.round(config.blockedFraction * cells)),
  );
  const grid = [...Array(rows).keys()].map((r) =>
    [...Array(cols).keys()].map((c) => (blocked.has(r * cols + c) ? "#" : ".")).join(""),
  );
  const free = [...Array(cells).keys()].filter((i) => !blocked.has(i));
  if (free.length < 2) return null;
  const s = rng.pick(free);
  const start: Pos = [Math.floor(s / cols), s % cols];
  const dist = bfsDistances(rows, cols, isOpen({ grid }), start);
  const maxPath = config.maxPathLength ?? Number.POSITIVE_INFINITY;
  const far = free.filter((i) => dist[i]! >= config.minPathLength && dist[i]! <= maxPath);
  if (far.length === 0) return null;
  const g = rng.pick(far);
  return { rows, cols, grid, start, goal: [Math.floor(g / cols), g % cols], optimal: dist[g]! };
}

const PlanPathPuzzleSchema = gridPayloadSchema({
  title: "Plan-Path",
  cells: PLAN_PATH_CELLS,
  minSize: 1,
  maxSize: PLAN_PATH_MAX_SIZE,
  maxOptimal: PLAN_PATH_MAX_SIZE * PLAN_PATH_MAX_SIZE,
  positions: { start: PosSchema, goal: PosSchema },
});

/** What the payload schema cannot check (see `GameModuleSpec.checkPuzzle`). */
function checkPlanPathPuzzle(puzzle: PlanPathPuzzle, where: string): void {
  const d = bfsDistances(puzzle.rows, puzzle.cols, isOpen(puzzle), puzzle.start)[
    puzzle.goal[0] * puzzle.cols + puzzle.goal[1]
  ]!;
  if (d !== puzzle.optimal) {
    throw new Error(
      `${where}: payload.optimal is ${puzzle.optimal} but BFS gives ${d < 0 ? "unreachable" : d}`,
    );
  }
}

/** `count` distinct Plan-Path tasks of `split` (see splits.ts for the disjointness guarantee). */
export const generatePlanPathTasks = splitTaskGenerator(
  PLAN_PATH,
  PlanPathGenerationSchema,
  generatePlanPathPuzzle,
  (puzzle) => {
    const key = { game: PLAN_PATH, grid: puzzle.grid, start: puzzle.start, goal: puzzle.goal };
    return { instanceKey: key, splitKey: key };
  },
);

// ---------------------------------------------------------------------------------------------
// Game

const PLAN_PATH_TOOL_CODE = `from collections import deque

grid = puzzle["grid"]
rows, cols = len(grid), len(grid[0])
start, goal = tuple(puzzle["position"]), tuple(puzzle["goal"])
moves = [("U", -1, 0), ("D", 1, 0), ("L", 0, -1), ("R", 0, 1)]
came_from = {start: None}
queue = deque([start])
while queue:
    cell = queue.popleft()
    if cell == goal:
        break
    for name, dr, dc in moves:
        nxt = (cell[0] + dr, cell[1] + dc)
        if 0 <= nxt[0] < rows and 0 <= nxt[1] < cols and grid[nxt[0]][nxt[1]] != "#" and nxt not in came_from:
            came_from[nxt] = (cell, name)
            queue.append(nxt)
plan = []
cell = goal
while came_from.get(cell) is not None:
    cell, name = came_from[cell]
    plan.append(name)
print("".join(reversed(plan)))
`;

/**
 * The Plan-Path game. `size` (the environment's configured rows and cols) only sets the documented
 * `planRewardRange`; puzzles of any size are played.
 */
export function planPathGame(
  rewards: PlanPathRewards,
  size: { readonly rows: number; readonly cols: number } = { rows: 10, cols: 10 },
): Game<PlanPathPuzzle, PlanPathBoard, Direction> {
  const gamma = rewards.shapingGamma;
  const scaleOf = (p: PlanPathPuzzle) => rewards.shapingScale ?? Math.max(p.rows, p.cols);
  const gameRewards: GameRewards = {
    step: rewards.step,
    invalid: rewards.invalid,
    solved: rewards.goal,
    optimalBonus: rewards.optimalBonus,
    failure: rewards.failure,
  };
  // F = (d − γ·d') / scale with d' = d ± 1 and 0 ≤ d < rows·cols, for puzzles of the configured size.
  const scale = rewards.shapingScale ?? Math.max(size.rows, size.cols);
  const maxD = size.rows * size.cols;
  const moveRange = [-gamma / scale, (maxD * (1 - gamma) + gamma) / scale] as const;
  return {
    name: PLAN_PATH,
    shortName: "path",
    title: "Plan-Path",
    rewards: gameRewards,
    planRewardRange: (maxPlanLength) => [maxPlanLength * moveRange[0], maxPlanLength * moveRange[1]],
    initialBoard: (puzzle) => ({ pos: puzzle.start }),
    parsePlan: parseDirections,
    formatPlan: (moves) => moves.join(""),
    applyMove(puzzle, board, move) {
      const [r, c] = step(board.pos, move);
      if (r < 0 || r >= puzzle.rows || c < 0 || c >= puzzle.cols)
        return { invalid: "off grid", at: formatPos(board.pos) };
      if (puzzle.grid[r]![c] === "#") return { invalid: "blocked", at: formatPos(board.pos) };
      const next: Pos = [r, c];
      const shaping =
        (distanceToGoal(puzzle, board.pos) - gamma * distanceToGoal(puzzle, next)) / scaleOf(puzzle);
      return { board: { pos: next }, reward: shaping };
    },
    isSolved: (puzzle, board) => samePos(board.pos, puzzle.goal),
    remaining: (puzzle, board) => distanceToGoal(puzzle, board.pos),
    solve: (puzzle, board) => shortestPlanPath(puzzle, board.pos),
    optimalMoves: (puzzle) => puzzle.optimal,
    render: renderPlanPath,
    hint: planPathHint,
    status: (_puzzle, board) => `at ${formatPos(board.pos)}`,
    toolData: (puzzle, board) => ({ grid: puzzle.grid, position: board.pos, goal: puzzle.goal }),
    toolRules:
      "Plan-Path: move the agent A to the goal G on a grid. '#' is blocked, '.' is free. Moves: U (row-1), " +
      "D (row+1), L (col-1), R (col+1). A move into '#' or off the grid is invalid and stops the plan. " +
      "Reaching G ends the episode; a shortest plan earns a bonus. Data: grid (rows of '.'/'#'), " +
      "position [row, col], goal [row, col].",
    planFormat: "letters U/D/L/R, e.g. UURDL",
    toolSolverCode: PLAN_PATH_TOOL_CODE,
    toolCall: planPathToolCall,
  };
}

/** The compact observation's extra lines (see `CompactHint`). */
export function planPathHint(kind: CompactHint, puzzle: PlanPathPuzzle, board: PlanPathBoard): string {
  const [r, c] = board.pos;
  const [gr, gc] = puzzle.goal;
  switch (kind) {
    case "position":
      return `at ${r},${c} goal ${gr},${gc}`;
    case "positions":
      return `agent ${r} ${c}\ngoal ${gr} ${gc}`;
    case "offset": {
      const parts = [];
      if (gr !== r) parts.push(`${gr < r ? "U" : "D"}${Math.abs(gr - r)}`);
      if (gc !== c) parts.push(`${gc < c ? "L" : "R"}${Math.abs(gc - c)}`);
      return `goal ${parts.join(" ") || "here"}`;
    }
    case "neighbours":
      return `near ${DIRECTIONS.map((d) => {
        const [nr, nc] = step(board.pos, d);
        if (nr < 0 || nr >= puzzle.rows || nc < 0 || nc >= puzzle.cols) return `${d}x`;
        return `${d}${samePos([nr, nc], puzzle.goal) ? "G" : puzzle.grid[nr]![nc]}`;
      }).join(" ")}`;
  }
}

/** The grid one row per line: `#` blocked, `.` free, `A` the agent, `G` the goal. */
export function renderPlanPath(puzzle: PlanPathPuzzle, board: PlanPathBoard): string {
  return puzzle.grid
    .map((row, r) =>
      [...row]
        .map((ch, c) => (samePos(board.pos, [r, c]) ? "A" : samePos(puzzle.goal, [r, c]) ? "G" : ch))
        .join(""),
    )
    .join("\n");
}

export type PlanPathState = GameState<PlanPathPuzzle, PlanPathBoard>;
export type PlanPathEnvironment = GameEnvironment<PlanPathPuzzle, PlanPathBoard>;

const PLAN_PATH_MODULE = gameModule({
  generateTasks: generatePlanPathTasks,
  optionsSchema: PlanPathOptionsSchema,
  game: (options, generation) => planPathGame(options.rewards, generation),
  puzzleSchema: PlanPathPuzzleSchema,
  checkPuzzle: checkPlanPathPuzzle,
});

/**
 * The Plan-Path environment. `options.roles`: "compact" (planner, fixer; default), "tool" (tool,
 * plan: Python in the sandbox), "single" (the planner alone) or "tool-call" (tool, plan: the tool
 * answers `path R C`, see plan-path-tool-call.ts).
 */
export const planPathEnv: (options?: PlanPathOptions) => PlanPathEnvironment = PLAN_PATH_MODULE.env;

/**
 * The solver's next action text for `agent` ("planner" | "fixer" | "tool" | "plan"); `roles`
 * "tool-call" gives that protocol's tool command and bare plan.
 */
export const planPathDemo: (
  task: Task<PlanPathPuzzle>,
  state: PlanPathState,
  agent: string,
  roles?: RolesVariant,
) => string = PLAN_PATH_MODULE.demo;
