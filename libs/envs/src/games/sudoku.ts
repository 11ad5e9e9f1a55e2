/**
 * Sudoku on N×N grids (N = 4 with 2×2 boxes by default; 6 with 2×3 boxes; 9 with 3×3 boxes).
 * A move places a value in a cell: `rcv` with 0-based row r, 0-based column c and value v (1..N),
 * or v = 0 to erase; a plan is a list of such triples (`013 102 231`).
 *
 * Generation: a full grid by seeded randomized backtracking; then clues are removed in random
 * order, each removal kept only if the solution counter (backtracking, stopping at 2) still
 * finds exactly one solution, until `givens` clues remain (or no clue can go). Every puzzle has a
 * unique solution. The split key is the *solution grid*: puzzles that share an answer always land
 * in the same split, so no test answer is ever seen in training.
 *
 * The board stays consistent: a placement that repeats a value in its row, column or box, writes
 * over a given, or is out of range is invalid (not applied). Team reward per step:
 *   setting a cell to its solution value                          fill = +fillTotal / blanks (fillTotal = 0.5)
 *   erasing or overwriting a cell that held its solution value   −fill (so erase and refill earn nothing)
 *   any other consistent placement (a wrong value, erasing one)  0
 *   invalid placement or unreadable plan (the plan stops there)   invalid = −0.1
 *   grid complete (hence solved)    solved = +1
 *   the episode ends unsolved       failure = −1
 * No step cost (every solution takes the same number of placements) and no optimal bonus.
 */
import type { Rng, Task } from "@troupe/core";
import { z } from "zod";
import type { GameEnvironment, GameState } from "./episode.ts";
import { badToolCall, type Game, type GameToolCall, type ToolCallResult } from "./game.ts";
import { gameModule, gameOptionsSchema } from "./game-module.ts";
import { answerText } from "./grid.ts";
import { SplitFractionsSchema, splitTaskGenerator } from "./splits.ts";

export const SUDOKU = "sudoku";

/** A Sudoku task's payload, as its schema declares it. */
export type SudokuPuzzle = Readonly<z.output<typeof SudokuPuzzleSchema>>;

export interface SudokuBoard {
  /** Row-major cells, 0 = empty; givens never change. */
  readonly cells: readonly number[];
}

export interface SudokuMove {
  readonly row: number;
  readonly col: number;
  /** 1..size, or 0 to erase. */
  readonly value: number;
}

/** Box shape per grid size. */
export const SUDOKU_BOXES: Readonly<Record<number, readonly [number, number]>> = {
  4: [2, 2],
  6: [2, 3],
  9: [3, 3],
};

/** The largest Sudoku (9×9), generated or given by a user: `size` is 4, 6 or 9, so at most 81 cells. */
export const SUDOKU_MAX_CELLS = 81;

/** Default number of givens left per size (fewer givens = harder; generation may stop above). */
export const DEFAULT_SUDOKU_GIVENS: Readonly<Record<number, number>> = { 4: 6, 6: 14, 9: 30 };

export const SudokuGenerationSchema = z.object({
  size: z.union([z.literal(4), z.literal(6), z.literal(9)]).default(4),
  /** Clues kept; default DEFAULT_SUDOKU_GIVENS[size]. */
  givens: z.number().int().min(0).optional(),
  /**
   * When set, each puzzle keeps a number of clues drawn uniformly from [givens, maxGivens] (one
   * draw per puzzle), so a split mixes puzzles with fewer and more blanks.
   */
  maxGivens: z.number().int().min(0).max(SUDOKU_MAX_CELLS).optional(),
  splitFractions: SplitFractionsSchema.default({ test: 0.1, validation: 0.1 }),
});
export type SudokuGeneration = z.output<typeof SudokuGenerationSchema>;

export const SudokuRewardsSchema = z.object({
  /** Total fill reward over all blanks; each cell set to its solution value earns fillTotal / blanks. */
  fillTotal: z.number().default(0.5),
  invalid: z.number().default(-0.1),
  solved: z.number().default(1),
  failure: z.number().default(-1),
});
export type SudokuRewards = z.output<typeof SudokuRewardsSchema>;

export const SudokuOptionsSchema = gameOptionsSchema(SudokuGenerationSchema, SudokuRewardsSchema);
export type SudokuOptions = z.input<typeof SudokuOptionsSchema>;

// ---------------------------------------------------------------------------------------------
// Solver and generator (bitmask backtracking with the most-constrained cell first)

interface Shape {
  readonly size: number;
  readonly boxRows: number;
  readonly boxCols: number;
}

const boxOf = (s: Shape, r: number, c: number) =>
  Math.floor(r / s.boxRows) * (s.size / s.boxCols) + Math.floor(c / s.boxCols);

/** Bitmask of values used in each row, column and box; null if the cells already conflict. */
function usedMasks(
  s: Shape,
  cells: readonly number[],
): { row: number[]; col: number[]; box: number[] } | null {
  const row = new Array<number>(s.size).fill(0);
  const col = new Array<number>(s.size).fill(0);
  const box = new Array<number>(s.size).fill(0);
  for (let i = 0; i < cells.length; i++) {
    const v = cells[i]!;
    if (v === 0) continue;
    const r = Math.floor(i / s.size);
    const c = i % s.size;
    const b = boxOf(s, r, c);
    const bit = 1 << v;
    if ((row[r]! | col[c]! | box[b]!) & bit) return null;
    row[r]! |= bit;
    col[c]! |= bit;
    box[b]! |= bit;
  }
  return { row, col, box };
}

/**
 * Backtracking search. `visit(grid)` is called for each solution and returns true to stop.
 * `order(candidates)` sets the value order (random for generation, ascending for counting).
 */
function search(
  s: Shape,
  cells: readonly number[],
  visit: (grid: number[]) => boolean,
  order: (values: number[]) => number[] = (v) => v,
): void {
  const masks = usedMasks(s, cells);
  if (masks === null) return;
  const grid = [...cells];
  const full = ((1 << (s.size + 1)) - 1) & ~1;
  const recurse = (): boolean => {
    let best = -1;
    let bestFree = 0;
    let bestCount = s.size + 1;
    for (let i = 0; i < grid.length; i++) {
      if (grid[i] !== 0) continue;
      const r = Math.floor(i / s.size);
      const c = i % s.size;
      const free = full & ~(masks.row[r]! | masks.col[c]! | masks.box[boxOf(s, r, c)]!);
      let count = 0;
      for (let m = free; m; m &= m - 1) count++;
      if (count < bestCount) {
        best = i;
        bestFree = free;
        bestCount = count;
        if (count <= 1) break;
      }
    }
    if (best < 0) return visit([...grid]);
    const r = Math.floor(best / s.size);
    const c = best % s.size;
    const b = boxOf(s, r, c);
    const values: number[] = [];
    for (let v = 1; v <= s.size; v++) if (bestFree & (1 << v)) values.push(v);
    for (const v of order(values)) {
      const bit = 1 << v;
      grid[best] = v;
      masks.row[r]! |= bit;
      masks.col[c]! |= bit;
      masks.box[b]! |= bit;
      const stop = recurse();
      masks.row[r]! &= ~bit;
      masks.col[c]! &= ~bit;
      masks.box[b]! &= ~bit;
      grid[best] = 0;
      if (stop) return true;
    }
    return false;
  };
  recurse();
}

/** Number of solutions, counting no further than `limit`. */
export function countSudokuSolutions(s: Shape, cells: readonly number[], limit = 2): number {
  let count = 0;
  search(s, cells, () => ++count >= limit);
  return count;
}

export function sudokuShape(size: number): Shape {
  const box = SUDOKU_BOXES[size];
  if (box === undefined) throw new Error(`sudoku: size must be 4, 6 or 9, got ${size}`);
  return { size, boxRows: box[0], boxCols: box[1] };
}

/** A random full grid (seeded backtracking with shuffled value order). */
export function randomSudokuGrid(rng: Rng, size: number): number[] {
  const shape = sudokuShape(size);
  let grid: number[] | null = null;
  search(
    shape,
    new Array<number>(size * size).fill(0),
    (g) => {
      grid = g;
      return true;
    },
    (values) => rng.shuffled(values),
  );
  return grid!;
}

/** One random puzzle, or null when its solution grid belongs to another split. */
export function generateSudokuPuzzle(
  rng: Rng,
  config: SudokuGeneration,
  inSplit: (splitKey: unknown) => boolean = () => true,
): SudokuPuzzle | null {
  const shape = sudokuShape(config.size);
  const solution = randomSudokuGrid(rng, config.size);
  if (!inSplit(sudokuSplitKey(config.size, solution))) return null;
  const least = config.givens ?? DEFAULT_SUDOKU_GIVENS[config.size]!;
  // No draw without maxGivens, so puzzles of recipes without it stay as they were.
  if (config.maxGivens !== undefined && config.maxGivens < least) {
    throw new Error(`sudoku options: maxGivens (${config.maxGivens}) is below givens (${least})`);
  }
  const target = config.maxGivens === undefined ? least : rng.intBetween(least, config.maxGivens);
  const givens = [...solution];
  let left = givens.length;
  for (const i of rng.shuffled([...givens.keys()])) {
    if (left <= target) break;
    const keep = givens[i]!;
    givens[i] = 0;
    if (countSudokuSolutions(shape, givens, 2) === 1) left--;
    else givens[i] = keep;
  }
  return { ...shape, size: config.size, givens, solution };
}

export function sudokuSplitKey(size: number, solution: readonly number[]): unknown {
  return { game: SUDOKU, size, solution };
}

/** `count` distinct Sudoku tasks of `split` (see splits.ts; the split key is the solution grid). */
export const generateSudokuTasks = splitTaskGenerator(
  SUDOKU,
  SudokuGenerationSchema,
  generateSudokuPuzzle,
  (puzzle) => ({
    instanceKey: { game: SUDOKU, size: puzzle.size, givens: puzzle.givens },
    splitKey: sudokuSplitKey(puzzle.size, puzzle.solution),
  }),
);

const SudokuPuzzleSchema = z
  .object({
    size: z.union([z.literal(4), z.literal(6), z.literal(9)]),
    boxRows: z.number().int(),
    boxCols: z.number().int(),
    /** Row-major cells, 0 = empty. */
    givens: z
      .array(z.number().int().min(0).max(9))
      .max(SUDOKU_MAX_CELLS, `at most ${SUDOKU_MAX_CELLS} cells`)
      .readonly(),
    /** The unique solution, row-major. */
    solution: z
      .array(z.number().int().min(1).max(9))
      .max(SUDOKU_MAX_CELLS, `at most ${SUDOKU_MAX_CELLS} cells`)
      .readonly(),
  })
  .superRefine((p, ctx) => {
    const [br, bc] = SUDOKU_BOXES[p.size]!;
    if (p.boxRows !== br || p.boxCols !== bc) {
      ctx.addIssue({ code: "custom", path: ["boxRows"], message: `size ${p.size} uses ${br}×${bc} boxes` });
    }
    for (const field of ["givens", "solution"] as const) {
      if (p[field].length !== p.size * p.size) {
        ctx.addIssue({ code: "custom", path: [field], message: `needs ${p.size * p.size} cells` });
      }
      if (p[field].some((v) => v > p.size))
        ctx.addIssue({ code: "custom", path: [field], message: `values are 0..${p.size}` });
    }
  });

/** What the payload schema cannot check (see `GameModuleSpec.checkPuzzle`). */
function checkSudokuPuzzle(puzzle: SudokuPuzzle, where: string): void {
  const bad = puzzle.givens.findIndex((v, i) => v !== 0 && v !== puzzle.solution[i]);
  if (bad >= 0) throw new Error(`${where}: payload.givens[${bad}] disagrees with payload.solution`);
  if (usedMasks(puzzle, puzzle.solution) === null) {
    throw new Error(`${where}: payload.solution breaks the Sudoku rules`);
  }
}

// ---------------------------------------------------------------------------------------------
// Tool call

/*
 * Sudoku's environment-provided tool, for the `tool-call` roles: the tool agent answers one command
 * and the environment runs it.
 *
 *   row R       the solver's placements that complete row R (0-based) from the board: erasures of
 *               wrong values first, then the missing values, e.g. `101 123`
 *
 * The grammar is strict: after trimming the text's ends, exactly `row`, a space and R (a decimal
 * number without leading zeros). What the plan agent reads:
 *   `101 123`                             the row's placements
 *   `row R is complete`                   nothing to do there (no progress, no penalty)
 *   `bad command: expected "row R"`       anything else
 *   `bad command: row R is off the board`
 * The tool stands for the paper's tool agent, whose program solves the puzzle, a row at a time so
 * that a tiny model copies at most 4 placements a turn: the tool agent picks a row that is not
 * complete, the plan agent copies its placements (the demonstrations call the first such row).
 */
const ROW_COMMAND = /^row (0|[1-9][0-9]?)$/;

/** Runs one tool command on the board (see the comment above for its outcomes). */
export function runRowCommand(
  puzzle: SudokuPuzzle,
  board: SudokuBoard,
  text: string,
): ToolCallResult<SudokuMove> {
  const match = ROW_COMMAND.exec(text.trim());
  if (match === null) return badToolCall('expected "row R"');
  const row = Number(match[1]);
  if (row >= puzzle.size)
    return { output: `bad command: row ${row} is off the board`, moves: null, bad: true };
  const moves = solveSudokuBoard(puzzle, board).filter((m) => m.row === row);
  if (moves.length === 0) return { output: `row ${row} is complete`, moves: null, bad: false };
  return { output: formatSudokuPlan(moves), moves, bad: false };
}

/** Erase wrong values first, then fill: every placement is then consistent (a subset of the solution). */
function solveSudokuBoard(puzzle: SudokuPuzzle, board: SudokuBoard): SudokuMove[] {
  const erase: SudokuMove[] = [];
  const place: SudokuMove[] = [];
  board.cells.forEach((v, i) => {
    const target = puzzle.solution[i]!;
    if (v === target) return;
    const row = Math.floor(i / puzzle.size);
    const col = i % puzzle.size;
    if (v !== 0) erase.push({ row, col, value: 0 });
    place.push({ row, col, value: target });
  });
  return [...erase, ...place];
}

/** The tool of the `tool-call` roles; its demonstration calls the first row that is not solved yet. */
export const sudokuToolCall: GameToolCall<SudokuPuzzle, SudokuBoard, SudokuMove> = {
  run: runRowCommand,
  demo(puzzle, board) {
    const first = board.cells.findIndex((v, i) => v !== puzzle.solution[i]);
    if (first < 0) throw new Error("sudoku tool demo: the board is already solved");
    return `row ${Math.floor(first / puzzle.size)}`;
  },
  plans: "part",
};

// ---------------------------------------------------------------------------------------------
// Game

/** Placements `rcv` (0-based row, 0-based column, value or 0 = erase), separated or not. */
export function parseSudokuPlan(text: string): SudokuMove[] | null {
  const digits = answerText(text).replace(/[\s,;'"`[\]().]/g, "");
  if (digits === "" || !/^\d+$/.test(digits) || digits.length % 3 !== 0) return null;
  const moves: SudokuMove[] = [];
  for (let i = 0; i < digits.length; i += 3) {
    moves.push({ row: Number(digits[i]), col: Number(digits[i + 1]), value: Number(digits[i + 2]) });
  }
  return moves;
}

export function formatSudokuPlan(moves: readonly SudokuMove[]): string {
  return moves.map((m) => `${m.row}${m.col}${m.value}`).join(" ");
}

/** The grid one row per line, `.` for empty cells. */
export function renderSudoku(puzzle: SudokuPuzzle, board: SudokuBoard): string {
  const rows: string[] = [];
  for (let r = 0; r < puzzle.size; r++) {
    rows.push(
      board.cells
        .slice(r * puzzle.size, (r + 1) * puzzle.size)
        .map((v) => (v === 0 ? "." : String(v)))
        .join(""),
    );
  }
  return rows.join("\n");
}

const SUDOKU_TOOL_CODE = `size, box_rows, box_cols = puzzle["size"], puzzle["box_rows"], puzzle["box_cols"]
board = puzzle["grid"]
# Solve from the givens only (the board may hold mistakes), most constrained cell first.
grid = [row[:] for row in puzzle["givens"]]

def candidates(r, c):
    used = set(grid[r]) | {grid[i][c] for i in range(size)}
    br, bc = r - r % box_rows, c - c % box_cols
    used |= {grid[i][j] for i in range(br, br + box_rows) for j in range(bc, bc + box_cols)}
    return [v for v in range(1, size + 1) if v not in used]

def solve():
    best = None
    for r in range(size):
        for c in range(size):
            if grid[r][c] == 0:
                options = candidates(r, c)
                if best is None or len(options) < len(best[2]):
                    best = (r, c, options)
    if best is None:
        return True
    r, c, options = best
    for v in options:
        grid[r][c] = v
        if solve():
            return True
    grid[r][c] = 0
    return False

solve()
cells = [(r, c) for r in range(size) for c in range(size)]
erase = [f"{r}{c}0" for (r, c) in cells if board[r][c] not in (0, grid[r][c])]
place = [f"{r}{c}{grid[r][c]}" for (r, c) in cells if board[r][c] != grid[r][c]]
print(" ".join(erase + place))
`;

export function sudokuGame(rewards: SudokuRewards): Game<SudokuPuzzle, SudokuBoard, SudokuMove> {
  const blanksOf = (p: SudokuPuzzle) => Math.max(1, p.givens.filter((v) => v === 0).length);
  const conflicts = (p: SudokuPuzzle, cells: readonly number[], r: number, c: number, v: number) => {
    for (let k = 0; k < p.size; k++) {
      if (k !== c && cells[r * p.size + k] === v) return true;
      if (k !== r && cells[k * p.size + c] === v) return true;
    }
    const br = r - (r % p.boxRows);
    const bc = c - (c % p.boxCols);
    for (let i = br; i < br + p.boxRows; i++) {
      for (let j = bc; j < bc + p.boxCols; j++)
        if ((i !== r || j !== c) && cells[i * p.size + j] === v) return true;
    }
    return false;
  };
  return {
    name: SUDOKU,
    shortName: "sudoku",
    title: "Sudoku",
    rewards: {
      step: 0,
      invalid: rewards.invalid,
      solved: rewards.solved,
      optimalBonus: 0,
      failure: rewards.failure,
    },
    // Over a plan, fills minus erasures is between −blanks and +blanks: ±fillTotal in all.
    planRewardRange: () => [-Math.abs(rewards.fillTotal), Math.abs(rewards.fillTotal)],
    initialBoard: (puzzle) => ({ cells: puzzle.givens }),
    parsePlan: parseSudokuPlan,
    formatPlan: formatSudokuPlan,
    applyMove(puzzle, board, move) {
      const { row: r, col: c, value: v } = move;
      const at = `(${r},${c})=${v}`;
      if (r >= puzzle.size || c >= puzzle.size || v > puzzle.size) return { invalid: "out of range", at };
      const i = r * puzzle.size + c;
      if (puzzle.givens[i] !== 0) return { invalid: "given cell", at };
      const before = board.cells[i]!;
      if (v === 0 && before === 0) return { invalid: "already empty", at };
      if (v !== 0 && conflicts(puzzle, board.cells, r, c, v)) return { invalid: "conflict", at };
      const cells = board.cells.map((x, k) => (k === i ? v : x));
      // Potential-based: Φ = fillTotal · (cells holding their solution value) / blanks, reward = ΔΦ.
      // A consistent but wrong value earns nothing: every puzzle has one solution, so that value
      // must be erased again (paying for it taught RL to fill fast and wrong).
      const fill = rewards.fillTotal / blanksOf(puzzle);
      const solution = puzzle.solution[i]!;
      const reward = fill * (Number(v === solution) - Number(before === solution));
      return { board: { cells }, reward };
    },
    isSolved: (_puzzle, board) => board.cells.every((v) => v !== 0),
    // Cells still to set to their solution value.
    remaining: (puzzle, board) => board.cells.filter((v, i) => v !== puzzle.solution[i]).length,
    solve: solveSudokuBoard,
    optimalMoves: () => null,
    render: renderSudoku,
    status: (_puzzle, board) => `${board.cells.filter((v) => v === 0).length} empty`,
    toolData: (puzzle, board) => {
      const rows = (cells: readonly number[]) =>
        [...Array(puzzle.size).keys()].map((r) => cells.slice(r * puzzle.size, (r + 1) * puzzle.size));
      return {
        size: puzzle.size,
        box_rows: puzzle.boxRows,
        box_cols: puzzle.boxCols,
        grid: rows(board.cells),
        givens: rows(puzzle.givens),
      };
    },
    toolRules:
      "Sudoku: fill the grid so that every row, column and box holds each value 1..N once ('.' = empty). A move is " +
      "three digits rcv: 0-based row r, 0-based column c, value v (v = 0 erases a cell you filled). A move that repeats " +
      "a value in its row, column or box, or changes a given, is invalid and stops the plan. Data: size, box_rows, " +
      "box_cols, grid (rows, 0 = empty), givens (rows, 0 = not given).",
    planFormat: "moves rcv separated by spaces, e.g. 013 102 231",
    toolSolverCode: SUDOKU_TOOL_CODE,
    toolCall: sudokuToolCall,
  };
}

export type SudokuState = GameState<SudokuPuzzle, SudokuBoard>;
export type SudokuEnvironment = GameEnvironment<SudokuPuzzle, SudokuBoard>;

const SUDOKU_MODULE = gameModule({
  generateTasks: generateSudokuTasks,
  optionsSchema: SudokuOptionsSchema,
  game: (options) => sudokuGame(options.rewards),
  puzzleSchema: SudokuPuzzleSchema,
  checkPuzzle: checkSudokuPuzzle,
});

/**
 * The Sudoku environment. `options.roles`: "compact" (planner, fixer; default), "tool" (tool, plan:
 * Python in the sandbox), "single" (the planner alone) or "tool-call" (tool, plan: the tool answers
 * `row R`).
 */
export const sudokuEnv: (options?: SudokuOptions) => SudokuEnvironment = SUDOKU_MODULE.env;

/** The solver's next action text for `agent` ("planner" | "fixer" | "tool" | "plan"). */
export const sudokuDemo: (task: Task<SudokuPuzzle>, state: SudokuState, agent: string) => string =
  SUDOKU_MODULE.demo;
