/**
 * What a puzzle game must provide so that the shared role protocols (compact planner/fixer,
 * Stronger-MAS tool/plan, and tool calls where the game offers them, see protocols/) can run it: boards, moves, a parser, a simulator with
 * per-move rewards, a solver, and text renderings.
 *
 * A *plan* is a sequence of moves executed from the current board. Execution stops at the first
 * invalid move (which is not applied) or as soon as the puzzle is solved; moves beyond
 * `maxPlanLength` are ignored.
 */

/** Reward constants every game uses (see docs/environments.md for each game's table). */
export interface GameRewards {
  /** Per executed (valid) move. */
  readonly step: number;
  /** An invalid move or an unreadable plan; execution stops there, so at most once per plan. */
  readonly invalid: number;
  /** Reaching a solved board. */
  readonly solved: number;
  /** Extra on solving when the whole episode used exactly the optimal number of moves (0 = none). */
  readonly optimalBonus: number;
  /** The episode ends unsolved: turns ran out, or the board became unsolvable (deadlock). */
  readonly failure: number;
}

export type MoveOutcome<Board> =
  | { readonly board: Board; readonly reward: number }
  | { readonly invalid: string; readonly at: string };

/**
 * Extra lines a compact observation can carry besides the board picture:
 *   position    the agent's and the goal's cells, e.g. `at 2,3 goal 5,1`
 *   positions   the same as two lines whose numbers a tool command copies: `agent 2 3`, `goal 5 1`
 *   offset      the moves the goal is away, ignoring walls, e.g. `goal D3 L2`
 *   neighbours  the cell behind each move (`.` free, `#` blocked, `x` off the grid, `G` the goal),
 *               e.g. `near U. D# Lx RG`
 */
export const COMPACT_HINTS = ["position", "positions", "offset", "neighbours"] as const;
export type CompactHint = (typeof COMPACT_HINTS)[number];

export interface Game<Puzzle, Board, Move> {
  /** Environment name (`plan-path`, `sokoban`, `sudoku`). */
  readonly name: string;
  /** Short name for compact prompts (`path`, `soko`, `sudoku`). */
  readonly shortName: string;
  /** Title for the tool-role prompts. */
  readonly title: string;
  readonly rewards: GameRewards;
  /**
   * Inclusive range of the summed `MoveOutcome.reward` over one plan of at most `maxPlanLength`
   * moves (the game-specific part; step costs and the invalid penalty excluded). Sets `rewardBounds`.
   */
  planRewardRange(maxPlanLength: number): readonly [number, number];
  initialBoard(puzzle: Puzzle): Board;
  /** Moves from an agent's text, or null if unreadable. */
  parsePlan(text: string): Move[] | null;
  formatPlan(moves: readonly Move[]): string;
  /** One move from `board`: the new board and the move's game-specific reward, or why it is invalid. */
  applyMove(puzzle: Puzzle, board: Board, move: Move): MoveOutcome<Board>;
  isSolved(puzzle: Puzzle, board: Board): boolean;
  /** Optimal remaining cost to solve from `board` (0 when solved); Infinity when it cannot be solved. */
  remaining(puzzle: Puzzle, board: Board): number;
  /** An optimal plan from `board`, or null when none exists. */
  solve(puzzle: Puzzle, board: Board): Move[] | null;
  /** Optimal number of moves from the start (for `optimalBonus`), or null when the game has none. */
  optimalMoves(puzzle: Puzzle): number | null;
  /** Compact text picture of the board, one row per line. */
  render(puzzle: Puzzle, board: Board): string;
  /**
   * An extra line of the compact observation (`hints` option); games without it offer no hints.
   * Tiny byte-level models read a plan off these more easily than off the picture alone.
   */
  hint?(kind: CompactHint, puzzle: Puzzle, board: Board): string;
  /** Short status for reports, e.g. `at (3,5)`. */
  status(puzzle: Puzzle, board: Board): string;
  /** The board as plain data for the tool agent's program (`puzzle` in Python). */
  toolData(puzzle: Puzzle, board: Board): unknown;
  /** Rules and data layout for the tool-role prompts. */
  readonly toolRules: string;
  /** How a plan is written, e.g. `letters U/D/L/R, e.g. UURDL`. */
  readonly planFormat: string;
  /** A correct Python solver over `puzzle` that prints an optimal plan (the tool role's demonstration). */
  readonly toolSolverCode: string;
  /** The environment-provided tool of the `tool-call` roles; games without it do not offer them. */
  readonly toolCall?: GameToolCall<Puzzle, Board, Move>;
}

/** What one tool command gave: the line the plan agent reads, and the path's moves if it gave one. */
export interface ToolCallResult<Move> {
  /** E.g. `RRDD`, `no path`, `bad command: expected "path R C"`. */
  readonly output: string;
  /** The moves of the path the command found; null when it found none or could not run. */
  readonly moves: readonly Move[] | null;
  /** The command could not be run (unparsable, or a target the tool refuses). */
  readonly bad: boolean;
}

/** A tool call that could not be run: what the plan agent reads is `bad command: <why>`. */
export function badToolCall<Move>(why: string): ToolCallResult<Move> {
  return { output: `bad command: ${why}`, moves: null, bad: true };
}

export type CellCommand = { readonly target: readonly [number, number] } | { readonly error: string };

/**
 * The tool agent's text as the command `<verb> R C` (Plan-Path's `path`, Sokoban's `push`), or why
 * it is not one. The grammar is strict: after trimming the text's ends, exactly the verb, a space,
 * R, a space, C, with R and C decimal numbers of at most two digits without leading zeros.
 */
export function parseCellCommand(verb: string, text: string): CellCommand {
  const match = new RegExp(`^${verb} (0|[1-9][0-9]?) (0|[1-9][0-9]?)$`).exec(text.trim());
  if (match === null) return { error: `expected "${verb} R C"` };
  return { target: [Number(match[1]), Number(match[2])] };
}

/**
 * The run of a `<verb> R C` tool (Plan-Path's `path`, Sokoban's `push`) on the board of a puzzle
 * with `rows × cols`: a bad command, a target off the board or one `refuse` names (`is a wall`) is
 * a bad call; else `plan` gives the moves to the target, written as letters, or `no path` when
 * there are none.
 */
export function cellCommandTool<
  Puzzle extends { readonly rows: number; readonly cols: number },
  Board,
  Move extends string,
>(
  verb: string,
  refuse: (puzzle: Puzzle, board: Board, row: number, col: number) => string | undefined,
  plan: (puzzle: Puzzle, board: Board, target: readonly [number, number]) => Move[] | null,
): (puzzle: Puzzle, board: Board, text: string) => ToolCallResult<Move> {
  return (puzzle, board, text) => {
    const command = parseCellCommand(verb, text);
    if ("error" in command) return badToolCall(command.error);
    const [r, c] = command.target;
    if (r >= puzzle.rows || c >= puzzle.cols) return badToolCall(`${r} ${c} is off the board`);
    const refused = refuse(puzzle, board, r, c);
    if (refused !== undefined) return badToolCall(`${r} ${c} ${refused}`);
    const moves = plan(puzzle, board, command.target);
    if (moves === null) return { output: "no path", moves: null, bad: false };
    return { output: moves.join(""), moves, bad: false };
  };
}

/** A short command language a tiny model can use instead of writing a program. */
export interface GameToolCall<Puzzle, Board, Move> {
  /** Runs the tool agent's text as one command on the board. */
  run(puzzle: Puzzle, board: Board, text: string): ToolCallResult<Move>;
  /** The command a solver would give on the board (the tool role's demonstration). */
  demo(puzzle: Puzzle, board: Board): string;
  /**
   * What one call's plan is (default `solution`):
   *   solution  a plan to the target the command names (Plan-Path's `path R C`, Sokoban's
   *             `push R C`): the tool earns 1 when it solves the puzzle from the board, 0 when not,
   *             and a call on the target gives the solver's plan, the plan agent's demonstration
   *   part      one part of a solution (Sudoku's `row R`): the tool earns its plan's progress
   *             (`planProgress`), and the plan agent's demonstration is the tool's output when
   *             that makes progress, the solver's plan when not
   */
  readonly plans?: "solution" | "part";
}

export interface Execution<Board> {
  readonly board: Board;
  /** Sum of step costs, move rewards and the invalid penalty (not solved/failure bonuses). */
  readonly reward: number;
  /** Valid moves applied. */
  readonly executed: number;
  readonly solved: boolean;
  /** Report of the first invalid move, e.g. `blocked at step 3 (2,4)`. */
  readonly invalid: string | null;
  /** Moves dropped because the plan was longer than `maxPlanLength`. */
  readonly cut: number;
}

/** Runs a plan from `board` (see the file comment for the stopping rules). */
export function executePlan<Puzzle, Board, Move>(
  game: Game<Puzzle, Board, Move>,
  puzzle: Puzzle,
  board: Board,
  moves: readonly Move[],
  maxPlanLength: number,
): Execution<Board> {
  let reward = 0;
  let executed = 0;
  let solved = game.isSolved(puzzle, board);
  let invalid: string | null = null;
  const limit = Math.min(moves.length, maxPlanLength);
  for (let i = 0; i < limit && !solved; i++) {
    const outcome = game.applyMove(puzzle, board, moves[i]!);
    if ("invalid" in outcome) {
      reward += game.rewards.invalid;
      invalid = `${outcome.invalid} at step ${i + 1} ${outcome.at}`;
      break;
    }
    board = outcome.board;
    reward += game.rewards.step + outcome.reward;
    executed++;
    solved = game.isSolved(puzzle, board);
  }
  return { board, reward, executed, solved, invalid, cut: Math.max(0, moves.length - maxPlanLength) };
}

/**
 * A role's own progress from one plan, in [-1, 1]: the fraction of the remaining optimal cost it
 * removed, (h_before − h_after) / h_before (1 = solved, negative = made things worse, −1 = made the
 * puzzle unsolvable), plus the invalid penalty if the plan hit an invalid move.
 */
export function planProgress(
  hBefore: number,
  hAfter: number,
  hitInvalid: boolean,
  invalidPenalty: number,
): number {
  const progress = hAfter === Number.POSITIVE_INFINITY ? -1 : hBefore > 0 ? (hBefore - hAfter) / hBefore : 0;
  return clamp(progress + (hitInvalid ? invalidPenalty : 0), -1, 1);
}

export function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}
