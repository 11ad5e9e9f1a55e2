/**
 * Sokoban: push every box onto a target. The player moves U/D/L/R; walking into a box pushes it
 * one cell if the cell behind it is free. Boxes cannot be pulled.
 *
 * Generation by reverse play (the idea of gym-sokoban, Schrader 2018): start from the solved
 * position (boxes on their targets), then play random *reverse* moves — the player steps, and may
 * pull a box that is behind it. Every reverse move undoes a legal forward push or step, so the
 * position reached is solvable by construction. A BFS solver over (player, boxes) then gives the
 * optimal number of moves; levels shorter than `minSolutionLength` are rejected.
 * Rooms are `rows × cols` including their border walls (gym-sokoban's convention), so the default
 * 6×6 room has a 4×4 interior, with round(interiorWallFraction · interior) extra walls.
 *
 * Team reward per step:
 *   each executed move                          step = −0.01
 *   invalid move (wall, blocked push, unreadable plan; the plan stops there)  invalid = −0.1
 *   a box pushed onto a target / off a target    boxOnTarget = +0.1 / boxOffTarget = −0.1
 *   all boxes on targets                         solved = +1, and optimalBonus = +0.5 more at the BFS optimum
 *   the episode ends unsolved, or the position becomes unsolvable (exact deadlock check by the solver)
 *                                                failure = −1
 */
import type { Rng, Task } from "@troupe/core";
import { z } from "zod";
import type { GameEnvironment, GameState } from "./episode.ts";
import {
  type CellCommand,
  type CompactHint,
  cellCommandTool,
  type Game,
  type GameToolCall,
  parseCellCommand,
} from "./game.ts";
import { gameModule, gameOptionsSchema } from "./game-module.ts";
import { DELTA, DIRECTIONS, type Direction, formatPos, type Pos, parseDirections } from "./grid.ts";
import { gridPayloadSchema, PosSchema, SOKOBAN_CELLS } from "./grid-payload.ts";
import { SplitFractionsSchema, splitTaskGenerator } from "./splits.ts";

export const SOKOBAN = "sokoban";

/**
 * A Sokoban task's payload, as its schema declares it: rows and columns, `walls` one string per row
 * (`#` wall, `_` floor), targets, the initial boxes (sorted in row-major order), the player, and the
 * optimal number of moves (BFS).
 */
export type SokobanPuzzle = Readonly<z.output<typeof SokobanPuzzleSchema>>;

export interface SokobanBoard {
  readonly player: Pos;
  /** Boxes sorted in row-major order (so equal positions have equal boards). */
  readonly boxes: readonly Pos[];
}

/**
 * The largest Sokoban task, generated or given by a user (the API's `input.task`): rows and columns
 * each, and boxes. They bound the exact solver that checks every task (its states grow with
 * cells^(boxes+1)) and the prompt.
 */
export const SOKOBAN_MAX_SIZE = 10;
export const SOKOBAN_MAX_BOXES = 2;

export const SokobanGenerationSchema = z.object({
  /** Room size including the border walls. */
  rows: z.number().int().min(4).max(SOKOBAN_MAX_SIZE).default(6),
  cols: z.number().int().min(4).max(SOKOBAN_MAX_SIZE).default(6),
  boxes: z.number().int().min(1).max(SOKOBAN_MAX_BOXES).default(1),
  /** Share of interior cells turned into walls (rounded). */
  interiorWallFraction: z.number().min(0).max(0.4).default(0.1),
  /** Random reverse moves played from the solved position. */
  reverseSteps: z.number().int().min(1).max(1000).default(40),
  /** Probability that a reverse step pulls the box behind the player when there is one. */
  pullProbability: z.number().min(0).max(1).default(0.6),
  /** Shortest accepted optimal solution, in moves. */
  minSolutionLength: z.number().int().min(1).default(4),
  splitFractions: SplitFractionsSchema.default({ test: 0.1, validation: 0.1 }),
});
export type SokobanGeneration = z.output<typeof SokobanGenerationSchema>;

export const SokobanRewardsSchema = z.object({
  step: z.number().default(-0.01),
  invalid: z.number().default(-0.1),
  boxOnTarget: z.number().default(0.1),
  boxOffTarget: z.number().default(-0.1),
  solved: z.number().default(1),
  optimalBonus: z.number().default(0.5),
  failure: z.number().default(-1),
});
export type SokobanRewards = z.output<typeof SokobanRewardsSchema>;

export const SokobanOptionsSchema = gameOptionsSchema(SokobanGenerationSchema, SokobanRewardsSchema);
export type SokobanOptions = z.input<typeof SokobanOptionsSchema>;

// ---------------------------------------------------------------------------------------------
// Rules and solver

const index = (cols: number, pos: Pos) => pos[0] * cols + pos[1];
const posOf = (cols: number, i: number): Pos => [Math.floor(i / cols), i % cols];
const sortBoxes = (boxes: readonly Pos[]): Pos[] => [...boxes].sort((a, b) => a[0] - b[0] || a[1] - b[1]);

function isWall(puzzle: Pick<SokobanPuzzle, "rows" | "cols" | "walls">, r: number, c: number): boolean {
  return r < 0 || r >= puzzle.rows || c < 0 || c >= puzzle.cols || puzzle.walls[r]![c] === "#";
}

function isTarget(puzzle: Pick<SokobanPuzzle, "targets">, r: number, c: number): boolean {
  return puzzle.targets.some((t) => t[0] === r && t[1] === c);
}

export function sokobanSolved(puzzle: Pick<SokobanPuzzle, "targets">, board: SokobanBoard): boolean {
  return board.boxes.every((b) => isTarget(puzzle, b[0], b[1]));
}

/**
 * BFS over positions (player cell, box cells): the shortest plan in moves (ties in U, D, L, R
 * order), or null if no position with every box on a target is reachable. Positions are numbers
 * (player + Σ box_k · cells^(k+1), boxes sorted), so the search is a flat Map. With at most 2 boxes
 * in a 10×10 room there are < 100·C(100,2) ≈ 5·10^5 positions, a bounded search.
 */
export function solveSokoban(puzzle: SokobanPuzzle, board: SokobanBoard): Direction[] | null {
  const targetSet = new Set(puzzle.targets.map((t) => index(puzzle.cols, t)));
  return searchPushes(puzzle, board, (boxes) => boxes.every((b) => targetSet.has(b)));
}

/**
 * The shortest plan after which some box stands on `cell` (ties in U, D, L, R order), or null if
 * no push gets one there; [] when one already does. The tool of the `tool-call` roles.
 */
export function planBoxTo(puzzle: SokobanPuzzle, board: SokobanBoard, cell: Pos): Direction[] | null {
  const goal = index(puzzle.cols, cell);
  return searchPushes(puzzle, board, (boxes) => boxes.includes(goal));
}

/**
 * BFS over positions from `board` to the first whose box cells (sorted indices) satisfy `done`;
 * `done` is only asked after a push, and of the start (see `solveSokoban` for the encoding).
 */
function searchPushes(
  puzzle: Pick<SokobanPuzzle, "rows" | "cols" | "walls">,
  board: SokobanBoard,
  done: (boxes: readonly number[]) => boolean,
): Direction[] | null {
  const { cols } = puzzle;
  const cells = puzzle.rows * cols;
  const encode = (player: number, boxes: readonly number[]) =>
    boxes.reduce((key, b, k) => key + b * cells ** (k + 1), player);
  const startBoxes = board.boxes.map((b) => index(cols, b)).sort((a, b) => a - b);
  const startKey = encode(index(cols, board.player), startBoxes);
  if (done(startBoxes)) return [];
  const parent = new Map<number, { prev: number; move: Direction }>();
  const seen = new Set<number>([startKey]);
  let frontier: { player: number; boxes: number[]; key: number }[] = [
    { player: index(cols, board.player), boxes: startBoxes, key: startKey },
  ];
  while (frontier.length > 0) {
    const next: typeof frontier = [];
    for (const node of frontier) {
      for (const move of DIRECTIONS) {
        const delta = DELTA[move][0] * cols + DELTA[move][1];
        const [r, c] = posOf(cols, node.player);
        const [nr, nc] = [r + DELTA[move][0], c + DELTA[move][1]];
        if (isWall(puzzle, nr, nc)) continue;
        const to = node.player + delta;
        let boxes = node.boxes;
        const hit = boxes.indexOf(to);
        if (hit >= 0) {
          const [br, bc] = [nr + DELTA[move][0], nc + DELTA[move][1]];
          const behind = to + delta;
          if (isWall(puzzle, br, bc) || boxes.includes(behind)) continue;
          boxes = boxes.map((b, k) => (k === hit ? behind : b)).sort((a, b) => a - b);
        }
        const key = encode(to, boxes);
        if (seen.has(key)) continue;
        seen.add(key);
        parent.set(key, { prev: node.key, move });
        if (hit >= 0 && done(boxes)) return unwind(parent, key, startKey);
        next.push({ player: to, boxes, key });
      }
    }
    frontier = next;
  }
  return null;
}

function unwind(
  parent: Map<number, { prev: number; move: Direction }>,
  key: number,
  startKey: number,
): Direction[] {
  const plan: Direction[] = [];
  while (key !== startKey) {
    const link = parent.get(key)!;
    plan.push(link.move);
    key = link.prev;
  }
  return plan.reverse();
}

/** One random level by reverse play, or null when the draw is rejected (see the file comment). */
export function generateSokobanPuzzle(
  rng: Rng,
  config: SokobanGeneration,
  inSplit: (splitKey: unknown) => boolean = () => true,
): SokobanPuzzle | null {
  const { rows, cols } = config;
  const interior: number[] = [];
  for (let r = 1; r < rows - 1; r++) for (let c = 1; c < cols - 1; c++) interior.push(r * cols + c);
  const wallCount = Math.round(config.interiorWallFraction * interior.length);
  const shuffled = rng.shuffled(interior);
  const innerWalls = new Set(shuffled.slice(0, wallCount));
  const floor = shuffled.slice(wallCount);
  if (floor.length < config.boxes + 2) return null;
  const walls = [...Array(rows).keys()].map((r) =>
    [...Array(cols).keys()]
      .map((c) =>
        r === 0 || c === 0 || r === rows - 1 || c === cols - 1 || innerWalls.has(r * cols + c) ? "#" : "_",
      )
      .join(""),
  );
  const room = { rows, cols, walls };
  // The floor must be one connected region, or reverse play could strand parts of the room.
  const floorSet = new Set(floor);
  const reached = new Set([floor[0]!]);
  const stack = [floor[0]!];
  while (stack.length > 0) {
    const cell = stack.pop()!;
    for (const d of DIRECTIONS) {
      const n = cell + DELTA[d][0] * cols + DELTA[d][1];
      if (floorSet.has(n) && !reached.has(n)) {
        reached.add(n);
        stack.push(n);
      }
    }
  }
  if (reached.size !== floor.length) return null;

  const targets = floor.slice(0, config.boxes);
  let boxes = [...targets];
  let player = floor[config.boxes]!;
  for (let i = 0; i < config.reverseSteps; i++) {
    const move = rng.pick(DIRECTIONS);
    const delta = DELTA[move][0] * cols + DELTA[move][1];
    const to = player + delta;
    const [r, c] = posOf(cols, to);
    if (isWall(room, r, c) || boxes.includes(to)) continue;
    const behind = player - delta; // a box here follows the player: the reverse of a push
    const pull = boxes.includes(behind) && rng.float() < config.pullProbability;
    if (pull) boxes = boxes.map((b) => (b === behind ? player : b));
    player = to;
  }
  if (boxes.every((b) => targets.includes(b))) return null;
  const puzzleBase = {
    rows,
    cols,
    walls,
    targets: sortBoxes(targets.map((t) => posOf(cols, t))),
    boxes: sortBoxes(boxes.map((b) => posOf(cols, b))),
    player: posOf(cols, player),
  };
  if (!inSplit(sokobanKey(puzzleBase))) return null;
  const plan = solveSokoban({ ...puzzleBase, optimal: 0 }, puzzleBase);
  if (plan === null) throw new Error("sokoban generator: reverse play produced an unsolvable level (a bug)");
  if (plan.length < config.minSolutionLength) return null;
  return { ...puzzleBase, optimal: plan.length };
}

/** Canonical form of a level: its rendering. */
export function sokobanKey(puzzle: Omit<SokobanPuzzle, "optimal">): unknown {
  return { game: SOKOBAN, level: renderSokoban(puzzle, puzzle).split("\n") };
}

/** `count` distinct Sokoban tasks of `split` (see splits.ts for the disjointness guarantee). */
export const generateSokobanTasks = splitTaskGenerator(
  SOKOBAN,
  SokobanGenerationSchema,
  generateSokobanPuzzle,
  (puzzle) => {
    const key = sokobanKey(puzzle);
    return { instanceKey: key, splitKey: key };
  },
);

/**
 * The room one row per line (XSB symbols, `_` for floor so a byte-level model sees every cell):
 * `#` wall, `_` floor, `.` target, `$` box, `*` box on target, `@` player, `+` player on target.
 */
export function renderSokoban(
  puzzle: Omit<SokobanPuzzle, "optimal" | "boxes" | "player">,
  board: SokobanBoard,
): string {
  return puzzle.walls
    .map((row, r) =>
      [...row]
        .map((ch, c) => {
          if (ch === "#") return "#";
          const target = isTarget(puzzle, r, c);
          if (board.player[0] === r && board.player[1] === c) return target ? "+" : "@";
          if (board.boxes.some((b) => b[0] === r && b[1] === c)) return target ? "*" : "$";
          return target ? "." : "_";
        })
        .join(""),
    )
    .join("\n");
}

const SokobanPuzzleSchema = gridPayloadSchema({
  title: "Sokoban",
  cells: SOKOBAN_CELLS,
  minSize: 3,
  maxSize: SOKOBAN_MAX_SIZE,
  positions: {
    targets: z
      .array(PosSchema)
      .min(1)
      .max(SOKOBAN_MAX_BOXES, `at most ${SOKOBAN_MAX_BOXES} targets`)
      .readonly(),
    boxes: z.array(PosSchema).min(1).max(SOKOBAN_MAX_BOXES, `at most ${SOKOBAN_MAX_BOXES} boxes`).readonly(),
    player: PosSchema,
  },
}).refine((p) => p.targets.length === p.boxes.length, {
  path: ["targets"],
  message: "needs as many targets as boxes",
});

/** What the payload schema cannot check (see `GameModuleSpec.checkPuzzle`). */
function checkSokobanPuzzle(puzzle: SokobanPuzzle, where: string): void {
  const plan = solveSokoban(puzzle, puzzle);
  if (plan === null || plan.length !== puzzle.optimal) {
    throw new Error(
      `${where}: payload.optimal is ${puzzle.optimal} but the solver gives ${plan?.length ?? "unsolvable"}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Tool call

/*
 * Sokoban's environment-provided tool, for the `tool-call` roles: the tool agent answers one short
 * command and the environment runs it.
 *
 *   push R C    a shortest plan from the board after which a box stands on row R, column C
 *               (0-based, row 0 at the top, the border walls included), as moves, e.g. `RRDL`
 *
 * The grammar is strict, as Plan-Path's `path R C`: after trimming the text's ends, exactly `push`,
 * a space, R, a space, C, decimal numbers without leading zeros. What the plan agent reads:
 *   `RRDL`                                the plan (ties broken in U, D, L, R order, so a call on the
 *                                         target of a one-box level gives the solver's plan)
 *   `no path`                             no sequence of pushes gets a box onto (R, C)
 *   `bad command: expected "push R C"`    anything else
 *   `bad command: R C is off the board`
 *   `bad command: R C is a wall`
 *   `bad command: R C already holds a box`
 * A call on a cell other than a target gives a real plan to that cell: the tool is only as good as
 * the coordinates it is given.
 */
export type PushCommand = CellCommand;

/** The tool agent's text as a `push R C` command, or why it is not one. */
export const parsePushCommand = (text: string): PushCommand => parseCellCommand("push", text);

/** Runs one tool command on the board (see the comment above for every outcome). */
export const runPushCommand = cellCommandTool<SokobanPuzzle, SokobanBoard, Direction>(
  "push",
  (puzzle, board, r, c) =>
    puzzle.walls[r]![c] === "#"
      ? "is a wall"
      : board.boxes.some((b) => b[0] === r && b[1] === c)
        ? "already holds a box"
        : undefined,
  planBoxTo,
);

/**
 * The tool of the `tool-call` roles; its demonstration is a call on the first target (row-major)
 * without a box. With one box that is the target, and the tool's plan is the solver's.
 */
export const sokobanToolCall: GameToolCall<SokobanPuzzle, SokobanBoard, Direction> = {
  run: runPushCommand,
  demo(puzzle, board) {
    const open = puzzle.targets.find((t) => !board.boxes.some((b) => b[0] === t[0] && b[1] === t[1]));
    if (open === undefined) throw new Error("sokoban tool demo: every target already holds a box");
    return `push ${open[0]} ${open[1]}`;
  },
};

// ---------------------------------------------------------------------------------------------
// Game

const SOKOBAN_TOOL_CODE = `from collections import deque

walls = puzzle["walls"]
targets = {tuple(t) for t in puzzle["targets"]}
start = (tuple(puzzle["player"]), tuple(sorted(tuple(b) for b in puzzle["boxes"])))
moves = [("U", -1, 0), ("D", 1, 0), ("L", 0, -1), ("R", 0, 1)]

def free(cell):
    r, c = cell
    return 0 <= r < len(walls) and 0 <= c < len(walls[0]) and walls[r][c] != "#"

came_from = {start: None}
queue = deque([start])
goal = None
while queue:
    state = queue.popleft()
    player, boxes = state
    if all(b in targets for b in boxes):
        goal = state
        break
    for name, dr, dc in moves:
        nxt = (player[0] + dr, player[1] + dc)
        if not free(nxt):
            continue
        new_boxes = boxes
        if nxt in boxes:
            behind = (nxt[0] + dr, nxt[1] + dc)
            if not free(behind) or behind in boxes:
                continue
            new_boxes = tuple(sorted(behind if b == nxt else b for b in boxes))
        new_state = (nxt, new_boxes)
        if new_state not in came_from:
            came_from[new_state] = (state, name)
            queue.append(new_state)
plan = []
state = goal
while state is not None and came_from[state] is not None:
    state, name = came_from[state]
    plan.append(name)
print("".join(reversed(plan)) if goal is not None else "no solution")
`;

/** The Sokoban game; `boxes` (the configured box count) only sets the documented `planRewardRange`. */
export function sokobanGame(
  rewards: SokobanRewards,
  boxes = 1,
): Game<SokobanPuzzle, SokobanBoard, Direction> {
  return {
    name: SOKOBAN,
    shortName: "soko",
    title: "Sokoban",
    rewards: {
      step: rewards.step,
      invalid: rewards.invalid,
      solved: rewards.solved,
      optimalBonus: rewards.optimalBonus,
      failure: rewards.failure,
    },
    // Over a plan, on- and off-target events of one box alternate, so they sum to at most one
    // event per box (either sign; both signs covered in case the reward signs are overridden).
    planRewardRange: () => [
      boxes * Math.min(0, rewards.boxOffTarget, rewards.boxOnTarget),
      boxes * Math.max(0, rewards.boxOnTarget, rewards.boxOffTarget),
    ],
    initialBoard: (puzzle) => ({ player: puzzle.player, boxes: puzzle.boxes }),
    parsePlan: parseDirections,
    formatPlan: (moves) => moves.join(""),
    applyMove(puzzle, board, move) {
      const [dr, dc] = DELTA[move];
      const to: Pos = [board.player[0] + dr, board.player[1] + dc];
      if (isWall(puzzle, to[0], to[1])) return { invalid: "wall", at: formatPos(board.player) };
      const hit = board.boxes.findIndex((b) => b[0] === to[0] && b[1] === to[1]);
      if (hit < 0) return { board: { player: to, boxes: board.boxes }, reward: 0 };
      const behind: Pos = [to[0] + dr, to[1] + dc];
      if (
        isWall(puzzle, behind[0], behind[1]) ||
        board.boxes.some((b) => b[0] === behind[0] && b[1] === behind[1])
      ) {
        return { invalid: "box blocked", at: formatPos(board.player) };
      }
      const wasOn = isTarget(puzzle, to[0], to[1]);
      const nowOn = isTarget(puzzle, behind[0], behind[1]);
      const reward =
        (nowOn && !wasOn ? rewards.boxOnTarget : 0) + (wasOn && !nowOn ? rewards.boxOffTarget : 0);
      const boxes = sortBoxes(board.boxes.map((b, k) => (k === hit ? behind : b)));
      return { board: { player: to, boxes }, reward };
    },
    isSolved: sokobanSolved,
    remaining(puzzle, board) {
      const plan = solveSokoban(puzzle, board);
      return plan === null ? Number.POSITIVE_INFINITY : plan.length;
    },
    solve: solveSokoban,
    optimalMoves: (puzzle) => puzzle.optimal,
    render: renderSokoban,
    status: (puzzle, board) =>
      `at ${formatPos(board.player)}, ${board.boxes.filter((b) => isTarget(puzzle, b[0], b[1])).length}/${board.boxes.length} on target`,
    toolData: (puzzle, board) => ({
      walls: puzzle.walls,
      targets: puzzle.targets,
      boxes: board.boxes,
      player: board.player,
    }),
    toolRules:
      "Sokoban: push every box onto a target. Symbols: '#' wall, '_' floor, '.' target, '$' box, '*' box on target, " +
      "'@' player, '+' player on target. Moves: U (row-1), D (row+1), L (col-1), R (col+1); walking into a box " +
      "pushes it one cell if the cell behind it is floor. Walking into a wall or pushing a blocked box is invalid and " +
      "stops the plan; boxes cannot be pulled, so a box in a corner off target loses the game. Data: walls (rows of " +
      "'#'/'_'), targets, boxes, player as [row, col].",
    planFormat: "letters U/D/L/R, e.g. UURDL",
    toolSolverCode: SOKOBAN_TOOL_CODE,
    toolCall: sokobanToolCall,
    hint: sokobanHint,
  };
}

/**
 * The compact observation's extra lines (see `CompactHint`; boxes and targets in row-major order):
 *   position    `at 2,3 box 3,3 target 4,1`
 *   positions   `player 2 3`, `box 3 3`, `target 4 1`, a line each, numbers a tool command copies
 *   offset      each box's moves to its target ignoring walls, `box D1 L2` (`box here` when on it)
 *   neighbours  the cell behind each move as the picture draws it, e.g. `near U_ D# L$ R.`
 */
export function sokobanHint(kind: CompactHint, puzzle: SokobanPuzzle, board: SokobanBoard): string {
  const [r, c] = board.player;
  switch (kind) {
    case "position":
      return [
        `at ${r},${c}`,
        ...board.boxes.map((b) => `box ${b[0]},${b[1]}`),
        ...puzzle.targets.map((t) => `target ${t[0]},${t[1]}`),
      ].join(" ");
    case "positions":
      return [
        `player ${r} ${c}`,
        ...board.boxes.map((b) => `box ${b[0]} ${b[1]}`),
        ...puzzle.targets.map((t) => `target ${t[0]} ${t[1]}`),
      ].join("\n");
    case "offset":
      return board.boxes
        .map((b, k) => {
          const t = puzzle.targets[k]!;
          const parts = [];
          if (t[0] !== b[0]) parts.push(`${t[0] < b[0] ? "U" : "D"}${Math.abs(t[0] - b[0])}`);
          if (t[1] !== b[1]) parts.push(`${t[1] < b[1] ? "L" : "R"}${Math.abs(t[1] - b[1])}`);
          return `box ${parts.join(" ") || "here"}`;
        })
        .join("; ");
    case "neighbours": {
      const picture = renderSokoban(puzzle, board).split("\n");
      return `near ${DIRECTIONS.map((d) => {
        const [nr, nc] = [r + DELTA[d][0], c + DELTA[d][1]];
        return `${d}${picture[nr]?.[nc] ?? "x"}`;
      }).join(" ")}`;
    }
  }
}

export type SokobanState = GameState<SokobanPuzzle, SokobanBoard>;
export type SokobanEnvironment = GameEnvironment<SokobanPuzzle, SokobanBoard>;

const SOKOBAN_MODULE = gameModule({
  generateTasks: generateSokobanTasks,
  optionsSchema: SokobanOptionsSchema,
  game: (options) => sokobanGame(options.rewards, options.boxes),
  puzzleSchema: SokobanPuzzleSchema,
  checkPuzzle: checkSokobanPuzzle,
});

/**
 * The Sokoban environment. `options.roles`: "compact" (planner, fixer; default), "tool" (tool, plan:
 * Python in the sandbox), "single" (the planner alone) or "tool-call" (tool, plan: the tool answers
 * `push R C`).
 */
export const sokobanEnv: (options?: SokobanOptions) => SokobanEnvironment = SOKOBAN_MODULE.env;

/** The solver's next action text for `agent` ("planner" | "fixer" | "tool" | "plan"). */
export const sokobanDemo: (task: Task<SokobanPuzzle>, state: SokobanState, agent: string) => string =
  SOKOBAN_MODULE.demo;
