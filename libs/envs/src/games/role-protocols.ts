/**
 * The role protocols over a puzzle game, as one `Environment` builder. All share the state,
 * the simulator and the team reward; they differ in who speaks and what the prompts look like.
 *
 * (a) `tool` (Stronger-MAS / AT-GRPO roles, for real LLMs), turn = tool then plan:
 *     - `tool` writes Python in a ```python block; the environment runs it through the `CodeRunner`
 *       given in the options with the current board as data (`puzzle`, loaded from puzzle.json),
 *       and shows its output to the plan agent. It moves nothing; its local reward is the progress
 *       its printed plan (last output line, or what follows `####`) *would* make from the board.
 *     - `plan` answers after `####` (e.g. `#### UURDL`); the plan is executed from the board.
 * (b) `compact` (a protocol a tiny byte-level model can learn), turn = planner then fixer:
 *     - `planner` sees the board (one row per line) and answers with a plan only (e.g. `UURDL`);
 *     - the environment executes it and reports where it failed (`UURDL: blocked at step 3 (2,4)`);
 *     - `fixer` sees the new board and the report, and answers with the corrected plan from there.
 * (c) `single` (the single-agent baseline of the compact protocol): the `planner` alone, one plan
 *     per turn; from the second turn on it sees the report of its own last plan and re-plans.
 * (d) `tool-call` (the tool roles of (a) in the compact protocol's form, for games with a
 *     `toolCall`), turn = tool then plan:
 *     - `tool` sees the compact observation and answers one short command (Plan-Path: `path R C`);
 *       the environment runs it and shows its output line to the plan agent. It moves nothing;
 *       its local reward is 1 when the path it got reaches the goal, 0 when it does not (or it got
 *       none), and the invalid penalty when the command could not be run;
 *     - `plan` sees the compact observation and the tool's output, and answers a plan as the
 *       compact planner does; the plan is executed from the board.
 * Executed moves are committed: each plan continues from where the previous one stopped.
 *
 * Rewards, per step: team reward = what the executed moves earned (step costs, game-specific move
 * rewards, the invalid penalty, +solved, +optimal bonus, −failure when the episode ends unsolved);
 * local reward of each acting role = its own plan's progress (`planProgress`, in [-1, 1]).
 * The episode ends when the puzzle is solved, when it becomes unsolvable (deadlock), or when the
 * last role of turn `maxTurns` has acted.
 */
import {
  type AgentId,
  canonicalJson,
  type Environment,
  type JointAction,
  type Observation,
  type Split,
  type StepResult,
  type Task,
  type Team,
  userObservation,
} from "@troupe/core";
import type { CodeRunner, RunResult } from "@troupe/sandbox";
import { z } from "zod";
import { COMPACT_HINTS, type CompactHint, executePlan, type Game, planProgress } from "./game.ts";
import { answerText } from "./grid.ts";
import { parseOptions } from "./options.ts";

/** Every role protocol the builder runs; `tool-call` needs a game with a `toolCall` (Plan-Path). */
export const RolesVariantSchema = z.enum(["compact", "tool", "single", "tool-call"]);
export type RolesVariant = z.infer<typeof RolesVariantSchema>;
/** The protocols every game offers: the `roles` option of games without a tool of their own. */
export const GameRolesSchema = z.enum(["compact", "tool", "single"]);

export const COMPACT_AGENTS: readonly AgentId[] = ["planner", "fixer"];
export const TOOL_AGENTS: readonly AgentId[] = ["tool", "plan"];
/** The single-agent baseline: the planner alone, re-planning from the report on each later turn. */
export const SINGLE_AGENTS: readonly AgentId[] = ["planner"];

export const ROLE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  planner: "proposes a plan from the board (compact protocol)",
  fixer: "corrects the plan after the environment reports where it failed (compact protocol)",
  tool: "writes Python that computes a plan; its output is shown to the plan agent",
  plan: "gives the final plan after ####; the environment executes it",
};

/** The `tool-call` roles' descriptions (the same agent ids as the Python tool roles). */
export const TOOL_CALL_ROLE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  tool: "calls the environment's tool with a short command; its output is shown to the plan agent",
  plan: "gives the plan from the board and the tool's output (compact protocol); the environment executes it",
};

/** Where the compact observation puts the last report (`reportLine`). */
const REPORT_LINES = ["after-hints", "first"] as const;
type ReportLine = (typeof REPORT_LINES)[number];

/** What pads a tool call's plan to `toolWidth` (every game's plan parser skips it). */
const TOOL_PADDING = ".";

const isCodeRunner = (value: unknown): value is CodeRunner =>
  typeof value === "object" && value !== null && typeof (value as { run?: unknown }).run === "function";

/** Options every game environment takes, with their defaults. */
export const EpisodeOptionsSchema = z.object({
  roles: GameRolesSchema.default("compact"),
  /** Turns per episode; a turn is every role acting once. */
  maxTurns: z.number().int().min(1).max(64).default(4),
  /**
   * Extra lines of the compact observation after the board (see `CompactHint` in game.ts), in this
   * order; [] is the board picture alone.
   */
  hints: z.array(z.enum(COMPACT_HINTS)).default([]),
  /**
   * Where the compact observation puts the report on the last executed plan (`last: …`): after the
   * hint lines (default), or first, before the board. First, every line an agent copies from (the
   * hints, the tool's output) stays the same distance from its cue on every turn, since the one
   * line whose length and presence vary comes before them.
   */
  reportLine: z.enum(REPORT_LINES).default("after-hints"),
  /** Moves of one plan executed at most; the rest is ignored (and reported). */
  maxPlanLength: z.number().int().min(1).max(1000).default(64),
  /** Runs the tool agent's Python (required when roles = "tool"): the sandbox from @troupe/sandbox. */
  runner: z
    .custom<CodeRunner>(isCodeRunner, "runner must be a CodeRunner (an object with run(request))")
    .optional(),
  /** Wall-clock limit for one tool program, ms. */
  toolWallMs: z.number().int().positive().default(10_000),
  /** Characters of the tool program's output shown to the plan agent (the tail is kept). */
  toolOutputChars: z.number().int().positive().default(1500),
  /**
   * The `tool-call` roles: a plan the tool gives is padded with `.` to this many characters (the
   * plan parsers skip dots). The plan agent reads `tool: <output>` on the line before its cue, so
   * at a fixed width the k-th character it writes copies the character a constant distance back,
   * whatever the plan's length — one attention offset to learn; without it the distance grows with
   * the plan, and a 2-layer byte model learns the copy late or not at all, depending on the seed.
   * 0 (or absent): no padding.
   */
  toolWidth: z.number().int().min(0).max(256).optional(),
  /** Base seed for `generateTasks` when none is given there. */
  seed: z.number().int().default(0),
});
/** The episode options with every protocol allowed (a game's own schema narrows `roles`). */
const AnyEpisodeOptionsSchema = EpisodeOptionsSchema.extend({ roles: RolesVariantSchema.default("compact") });
export type EpisodeOptions = z.input<typeof AnyEpisodeOptionsSchema>;
type ParsedEpisodeOptions = z.output<typeof AnyEpisodeOptionsSchema>;

export interface GameState<Puzzle, Board> {
  readonly puzzle: Puzzle;
  readonly board: Board;
  /** Completed turns. */
  readonly turn: number;
  /** Valid moves executed so far in the episode. */
  readonly movesTaken: number;
  readonly solved: boolean;
  readonly done: boolean;
  /** The environment's report on the last executed plan, e.g. `RRD: blocked at step 3 (2,4)`. */
  readonly report: string | null;
  /** Tool variants: the last tool program's output, or the tool call's output line, as shown to the plan agent. */
  readonly toolOutput: string | null;
}

export interface GenerateOptions {
  /** Base seed of the split's seed stream (default: the environment's `seed` option). */
  readonly seed?: number;
}

export interface GameEnvironment<Puzzle, Board> extends Environment<GameState<Puzzle, Board>, Puzzle> {
  readonly roles: RolesVariant;
  readonly maxTurns: number;
  readonly rewardBounds: {
    readonly team: readonly [number, number];
    readonly local: readonly [number, number];
  };
  /** Synchronous: the initial state depends only on the task. */
  reset(task: Task<Puzzle>, seed: number): GameState<Puzzle, Board>;
  /** `count` distinct tasks of `split`, disjoint from every other split (see splits.ts). */
  generateTasks(split: Split, count: number, options?: GenerateOptions): Task<Puzzle>[];
  /** The solver's next action text for `agent` (see `gameDemo`). */
  demo(task: Task<Puzzle>, state: GameState<Puzzle, Board>, agent: AgentId): string;
}

export interface GameEnvironmentSpec<Puzzle, Board, Move> {
  readonly game: Game<Puzzle, Board, Move>;
  readonly options: EpisodeOptions;
  /** Checks a task payload and returns it as a puzzle (throws naming the bad field). */
  readonly checkPuzzle: (payload: unknown, taskId: string) => Puzzle;
  readonly generateTasks: (split: Split, count: number, seed: number) => Task<Puzzle>[];
}

/** The episode options out of a game's options object (other keys are the game's own). */
export function parseEpisodeOptions(name: string, options: EpisodeOptions): ParsedEpisodeOptions {
  return parseOptions(`${name} options`, AnyEpisodeOptionsSchema, options);
}

/** Builds the environment for one game and one role variant. */
export function gameEnvironment<Puzzle, Board, Move>(
  spec: GameEnvironmentSpec<Puzzle, Board, Move>,
): GameEnvironment<Puzzle, Board> {
  const { game } = spec;
  const options = parseEpisodeOptions(game.name, spec.options);
  const agents =
    options.roles === "tool" || options.roles === "tool-call"
      ? TOOL_AGENTS
      : options.roles === "single"
        ? SINGLE_AGENTS
        : COMPACT_AGENTS;
  // The compact protocol and its single-agent baseline share observations and plan execution;
  // the tool-call roles use the compact observation too, and run their tool synchronously.
  const compactLike = options.roles === "compact" || options.roles === "single";
  const toolCalls = options.roles === "tool-call";
  if (toolCalls && game.toolCall === undefined) {
    throw new Error(
      `${game.name} options: roles: "tool-call" needs a game tool, and ${game.name} offers none`,
    );
  }
  const runner = options.runner;
  const hints = options.hints;
  if (hints.length > 0 && game.hint === undefined) {
    throw new Error(`${game.name} options: hints: ${game.name} offers no hints (only the board picture)`);
  }
  if (hints.length > 0 && !compactLike && !toolCalls) {
    throw new Error(
      `${game.name} options: hints are lines of the compact observation, which roles "${options.roles}" does not use`,
    );
  }
  if (options.roles === "tool" && runner === undefined) {
    throw new Error(
      `${game.name}: roles "tool" runs the tool agent's Python and needs a CodeRunner in options.runner ` +
        '(e.g. the sandbox from @troupe/sandbox); use roles "compact" to run without one',
    );
  }
  type State = GameState<Puzzle, Board>;
  const rewards = game.rewards;

  /** Mutable copy of the state fields a step changes; the input state is never touched. */
  interface Draft {
    board: Board;
    movesTaken: number;
    solved: boolean;
    report: string | null;
    toolOutput: string | null;
    team: number;
    local: Record<AgentId, number>;
    info: Record<string, unknown>;
  }

  /** Parses and executes an acting role's plan; updates the draft. */
  function commitPlan(puzzle: Puzzle, draft: Draft, agent: AgentId, text: string): void {
    const moves = game.parsePlan(text);
    if (moves === null) {
      draft.team += rewards.invalid;
      draft.local[agent] = planProgress(1, 1, true, rewards.invalid);
      draft.report = "unreadable plan";
      draft.info[agent] = { readable: false };
      return;
    }
    const hBefore = game.remaining(puzzle, draft.board);
    const run = executePlan(game, puzzle, draft.board, moves, options.maxPlanLength);
    draft.board = run.board;
    draft.movesTaken += run.executed;
    draft.team += run.reward;
    if (run.solved) {
      draft.solved = true;
      draft.team += rewards.solved;
      if (game.optimalMoves(puzzle) === draft.movesTaken) draft.team += rewards.optimalBonus;
    }
    const hAfter = run.solved ? 0 : game.remaining(puzzle, run.board);
    draft.local[agent] = planProgress(hBefore, hAfter, run.invalid !== null, rewards.invalid);
    const outcome = run.invalid ?? (run.solved ? "solved" : `not solved, ${game.status(puzzle, run.board)}`);
    const cut = run.cut > 0 ? ` (cut at ${options.maxPlanLength})` : "";
    draft.report = `${shorten(game.formatPlan(moves), 24)}: ${outcome}${cut}`;
    draft.info[agent] = { readable: true, executed: run.executed, invalid: run.invalid, solved: run.solved };
  }

  /**
   * Runs the tool agent's command; its output line goes to the plan agent. Local reward: the
   * invalid penalty when the command could not be run; else for a tool whose calls plan to a target
   * (`GameToolCall.plans` "solution") 1 when the path it gave reaches the goal (executed from the
   * board, stopping there), 0 when it gave none or one that does not; for one whose calls plan a
   * part ("part"), the progress that part would make (`toolPlanProgress`).
   */
  function callTool(puzzle: Puzzle, draft: Draft, agent: AgentId, text: string): void {
    const tool = game.toolCall!;
    const call = tool.run(puzzle, draft.board, text);
    draft.toolOutput =
      call.moves !== null && options.toolWidth !== undefined
        ? call.output.padEnd(options.toolWidth, TOOL_PADDING)
        : call.output;
    const reachesGoal =
      call.moves !== null && executePlan(game, puzzle, draft.board, call.moves, options.maxPlanLength).solved;
    if (call.bad) draft.local[agent] = planProgress(1, 1, true, rewards.invalid);
    else if (tool.plans !== "part") draft.local[agent] = reachesGoal ? 1 : 0;
    else if (call.moves === null) draft.local[agent] = 0;
    else draft.local[agent] = toolPlanProgress(game, puzzle, draft.board, call.moves, options.maxPlanLength);
    draft.info[agent] = { command: text, output: call.output, bad: call.bad, reachesGoal };
  }

  /** Runs the tool agent's program; its output goes to the plan agent, its plan is only evaluated. */
  async function runTool(puzzle: Puzzle, draft: Draft, agent: AgentId, text: string): Promise<void> {
    const code = extractPython(text);
    if (code === null) {
      draft.toolOutput = "(the tool agent wrote no ```python block)";
      draft.local[agent] = planProgress(1, 1, true, rewards.invalid);
      draft.info[agent] = { code: false };
      return;
    }
    const result: RunResult = await runner!.run({
      language: "python",
      code: `${PYTHON_PRELUDE}${code}`,
      files: { "puzzle.json": JSON.stringify(game.toolData(puzzle, draft.board)) },
      limits: { wallMs: options.toolWallMs },
    });
    draft.toolOutput = formatRun(result, options.toolOutputChars);
    const moves = result.status === "ok" ? game.parsePlan(toolPlanText(result.stdout)) : null;
    if (moves === null) {
      draft.local[agent] = planProgress(1, 1, true, rewards.invalid);
    } else {
      const run = executePlan(game, puzzle, draft.board, moves, options.maxPlanLength);
      const hAfter = run.solved ? 0 : game.remaining(puzzle, run.board);
      draft.local[agent] = planProgress(
        game.remaining(puzzle, draft.board),
        hAfter,
        run.invalid !== null,
        rewards.invalid,
      );
    }
    draft.info[agent] = { code: true, status: result.status, planReadable: moves !== null };
  }

  function checkActions(state: State, actions: JointAction): AgentId[] {
    if (state.done) throw new Error(`${game.name}: step called on a finished episode`);
    const acting = Object.keys(actions);
    for (const agent of acting) {
      if (!agents.includes(agent)) {
        throw new Error(
          `${game.name} (${options.roles} roles): unknown agent "${agent}"; agents: ${agents.join(", ")}`,
        );
      }
    }
    if (acting.length === 0) throw new Error(`${game.name}: step needs at least one agent's action`);
    // Applied in the environment's role order, whatever the key order of `actions`.
    return agents.filter((a) => a in actions);
  }

  function newDraft(state: State): Draft {
    return {
      board: state.board,
      movesTaken: state.movesTaken,
      solved: state.solved,
      report: state.report,
      toolOutput: state.toolOutput,
      team: 0,
      local: {},
      info: {},
    };
  }

  /** Turn accounting, end of episode and failure penalty; builds the new state. */
  function finish(state: State, draft: Draft, acting: readonly AgentId[]): StepResult<State> {
    const turn = state.turn + (acting.includes(agents[agents.length - 1]!) ? 1 : 0);
    let done = draft.solved;
    if (!draft.solved) {
      const deadlock = game.remaining(state.puzzle, draft.board) === Number.POSITIVE_INFINITY;
      if (deadlock || turn >= options.maxTurns) {
        done = true;
        draft.team += rewards.failure;
        draft.info.failure = deadlock ? "deadlock" : "out of turns";
        if (deadlock) draft.report = `${draft.report ?? ""}; deadlock`;
      }
    }
    return {
      state: {
        puzzle: state.puzzle,
        board: draft.board,
        turn,
        movesTaken: draft.movesTaken,
        solved: draft.solved,
        done,
        report: draft.report,
        toolOutput: draft.toolOutput,
      },
      teamReward: draft.team,
      localRewards: draft.local,
      done,
      success: draft.solved,
      info: draft.info,
    };
  }

  // One plan: at most maxPlanLength step costs, its move rewards, at most one invalid penalty.
  const [moveLo, moveHi] = game.planRewardRange(options.maxPlanLength);
  const L = options.maxPlanLength;
  const planLow = L * Math.min(0, rewards.step) + Math.min(0, moveLo) + Math.min(0, rewards.invalid);
  const planHigh = L * Math.max(0, rewards.step) + Math.max(0, moveHi);
  const committers = options.roles === "compact" ? 2 : 1; // both compact roles may act in one (parallel) step
  const rewardBounds = {
    team: [
      committers * planLow + Math.min(0, rewards.failure),
      committers * planHigh + Math.max(0, rewards.solved) + Math.max(0, rewards.optimalBonus),
    ] as const,
    local: [-1, 1] as const,
  };

  const env: GameEnvironment<Puzzle, Board> = {
    name: game.name,
    agents,
    roles: options.roles,
    maxTurns: options.maxTurns,
    rewardBounds,
    // The optimal number of moves from the start (plan-path, sokoban: stored with the puzzle;
    // sudoku: the cells left to fill).
    difficulty(task: Task<Puzzle>): number {
      const puzzle = spec.checkPuzzle(task.payload, task.id);
      return game.optimalMoves(puzzle) ?? game.remaining(puzzle, game.initialBoard(puzzle));
    },
    reset(task: Task<Puzzle>): State {
      const puzzle = spec.checkPuzzle(task.payload, task.id);
      return {
        puzzle,
        board: game.initialBoard(puzzle),
        turn: 0,
        movesTaken: 0,
        solved: false,
        done: false,
        report: null,
        toolOutput: null,
      };
    },
    observe(state: State, agent: AgentId): Observation {
      if (!agents.includes(agent)) {
        throw new Error(
          `${game.name} (${options.roles} roles): unknown agent "${agent}"; agents: ${agents.join(", ")}`,
        );
      }
      if (compactLike || toolCalls) return compactObservation(game, state, agent, hints, options.reportLine);
      return agent === "tool" ? toolObservation(game, state) : planObservation(game, state);
    },
    step(state: State, actions: JointAction) {
      const acting = checkActions(state, actions);
      const draft = newDraft(state);
      if (compactLike) {
        for (const agent of acting)
          if (!draft.solved) commitPlan(state.puzzle, draft, agent, actions[agent]!);
        return finish(state, draft, acting);
      }
      if (toolCalls) {
        for (const agent of acting) {
          if (draft.solved) break;
          if (agent === "tool") callTool(state.puzzle, draft, agent, actions[agent]!);
          else commitPlan(state.puzzle, draft, agent, actions[agent]!);
        }
        return finish(state, draft, acting);
      }
      return (async () => {
        for (const agent of acting) {
          if (draft.solved) break;
          if (agent === "tool") await runTool(state.puzzle, draft, agent, actions[agent]!);
          else commitPlan(state.puzzle, draft, agent, actions[agent]!);
        }
        return finish(state, draft, acting);
      })();
    },
    generateTasks(split, count, generate = {}) {
      return spec.generateTasks(split, count, generate.seed ?? options.seed);
    },
    demo(task, state, agent) {
      // Only the first maxPlanLength moves of a plan execute, so a demonstration teaches no more.
      return gameDemo(game, task, state, agent, options.maxPlanLength, options.roles);
    },
  };
  return env;
}

/** What a plan executed from `board` would do, as `planProgress` (the board is not changed). */
function toolPlanProgress<Puzzle, Board, Move>(
  game: Game<Puzzle, Board, Move>,
  puzzle: Puzzle,
  board: Board,
  moves: readonly Move[],
  maxPlanLength: number,
): number {
  const run = executePlan(game, puzzle, board, moves, maxPlanLength);
  const hAfter = run.solved ? 0 : game.remaining(puzzle, run.board);
  return planProgress(game.remaining(puzzle, board), hAfter, run.invalid !== null, game.rewards.invalid);
}

// ---------------------------------------------------------------------------------------------
// Observations

/**
 * Compact prompt: `<game> <role>`, the board one row per line, the hint lines, the last report
 * (with `reportLine: "first"` before the board instead), for the tool-call roles' plan agent the
 * tool's output (`tool: RRDD`), and a cue (`plan:`;
 * `fix:` for the fixer, `call:` for the tool-call roles' tool agent). e.g. for the fixer:
 *   path fixer
 *   .A#.
 *   .#..
 *   ...#
 *   #..G
 *   last: RR: blocked at step 2 (0,1)
 *   fix:
 */
export function compactObservation<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  state: GameState<Puzzle, Board>,
  agent: AgentId,
  hints: readonly CompactHint[] = [],
  reportLine: ReportLine = "after-hints",
): Observation {
  const lines = [`${game.shortName} ${agent}`];
  const report = state.report === null ? [] : [`last: ${state.report}`];
  if (reportLine === "first") lines.push(...report);
  lines.push(game.render(state.puzzle, state.board));
  for (const kind of hints) lines.push(game.hint!(kind, state.puzzle, state.board));
  if (reportLine === "after-hints") lines.push(...report);
  if (agent === "plan" && state.toolOutput !== null) lines.push(`tool: ${state.toolOutput}`);
  lines.push(agent === "fixer" ? "fix:" : agent === "tool" ? "call:" : "plan:");
  return userObservation(lines.join("\n"));
}

function boardSection<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  state: GameState<Puzzle, Board>,
): string {
  const last = state.report === null ? "" : `\nLast executed plan: ${state.report}`;
  return `${game.toolRules}\n\nCurrent board (row 0 at the top):\n${game.render(state.puzzle, state.board)}${last}`;
}

function toolObservation<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  state: GameState<Puzzle, Board>,
): Observation {
  const system =
    `You are the tool agent of a two-agent team solving a ${game.title} puzzle. You write a Python program ` +
    "that computes a plan; its output is shown to the plan agent, who gives the final answer.";
  const user =
    `${boardSection(game, state)}\n\n` +
    "Your program runs with python3. The variable `puzzle` already holds the current board as data:\n" +
    `${JSON.stringify(game.toolData(state.puzzle, state.board))}\n\n` +
    `Write exactly one \`\`\`python block. Print the plan (${game.planFormat}) as the last line of output.`;
  return userObservation(user, system);
}

function planObservation<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  state: GameState<Puzzle, Board>,
): Observation {
  const system =
    `You are the plan agent of a two-agent team solving a ${game.title} puzzle. The tool agent ran a program ` +
    "to help you. Give the final plan after ####; it is executed from the current board.";
  const user =
    `${boardSection(game, state)}\n\n` +
    `Tool agent's program output:\n${state.toolOutput ?? "(none)"}\n\n` +
    `Answer with the plan (${game.planFormat}) after ####.`;
  return userObservation(user, system);
}

// ---------------------------------------------------------------------------------------------
// Tool runs

/** Loads the board data the prompt promises as `puzzle`. */
export const PYTHON_PRELUDE = 'import json\nwith open("puzzle.json") as _f:\n    puzzle = json.load(_f)\n';

/** The last ```python (or bare ```) block of a message, or null. */
export function extractPython(text: string): string | null {
  const blocks = [...text.matchAll(/```(?:python|py|python3)?[ \t]*\n([\s\S]*?)```/g)];
  const code = blocks.at(-1)?.[1];
  return code === undefined || code.trim() === "" ? null : code;
}

/** What of a tool program's output is a plan: after `####` if printed, else the last non-empty line. */
export function toolPlanText(stdout: string): string {
  if (stdout.includes("####")) return answerText(stdout);
  const lines = stdout.split("\n").filter((l) => l.trim() !== "");
  return lines.at(-1) ?? "";
}

function formatRun(result: RunResult, maxChars: number): string {
  const tail = (s: string) => (s.length > maxChars ? `...${s.slice(-maxChars)}` : s);
  if (result.status === "ok") return tail(result.stdout) || "(no output)";
  const stderr = result.stderr.trim() === "" ? "" : `\n${tail(result.stderr)}`;
  return `[${result.status}] ${tail(result.stdout)}${stderr}`;
}

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

// ---------------------------------------------------------------------------------------------
// Demonstrations and teams

/**
 * The solver's next action for a role, for supervised warm starts: the optimal plan from the
 * current board (`planner`/`fixer`: the plan alone; `plan`: `#### <plan>`), or for `tool` a
 * ```python block with a correct solver over `puzzle`. With `roles` "tool-call": `tool` gives the
 * game tool's demonstration command (Plan-Path: `path <goal row> <goal col>`), `plan` the plan alone.
 */
export function gameDemo<Puzzle, Board, Move>(
  game: Game<Puzzle, Board, Move>,
  task: Task<Puzzle>,
  state: GameState<Puzzle, Board>,
  agent: AgentId,
  maxPlanLength = Number.POSITIVE_INFINITY,
  roles: RolesVariant = "compact",
): string {
  if (task.payload !== state.puzzle && canonicalJson(task.payload) !== canonicalJson(state.puzzle)) {
    throw new Error(`${game.name} demo: state is not an episode of task ${task.id}`);
  }
  if (state.done) throw new Error(`${game.name} demo: the episode of task ${task.id} is over`);
  if (agent === "tool" && roles === "tool-call") {
    if (game.toolCall === undefined) throw new Error(`${game.name} demo: ${game.name} offers no tool calls`);
    return game.toolCall.demo(state.puzzle, state.board);
  }
  if (agent === "tool") return `\`\`\`python\n${game.toolSolverCode}\`\`\``;
  if (
    agent === "plan" &&
    roles === "tool-call" &&
    game.toolCall?.plans === "part" &&
    state.toolOutput !== null
  ) {
    // The tool's part of a solution, when it is one that makes progress: the plan agent copies it.
    const part = game.parsePlan(state.toolOutput);
    if (part !== null && toolPlanProgress(game, state.puzzle, state.board, part, maxPlanLength) > 0)
      return game.formatPlan(part.slice(0, maxPlanLength));
  }
  const moves = game.solve(state.puzzle, state.board);
  if (moves === null) throw new Error(`${game.name} demo: task ${task.id} cannot be solved from this board`);
  const plan = game.formatPlan(moves.slice(0, maxPlanLength));
  if (agent === "planner" || agent === "fixer") return plan;
  if (agent === "plan") return roles === "tool-call" ? plan : `#### ${plan}`;
  throw new Error(`${game.name} demo: unknown agent "${agent}"`);
}

export interface EnvTeamOptions {
  /** `shared`: one policy for all roles (default); `per-role`: a policy per role, named after it. */
  readonly policies?: "shared" | "per-role";
  readonly name?: string;
  /** Defaults to the environment's `maxTurns` (they must agree for the failure penalty to land). */
  readonly maxTurns?: number;
}

/** The team matching a game environment: its roles in turn order, sequential, its `maxTurns`. */
export function envTeam(
  env: Pick<GameEnvironment<unknown, unknown>, "name" | "agents" | "roles" | "maxTurns">,
  options: EnvTeamOptions = {},
): Team {
  const perRole = options.policies === "per-role";
  const descriptions = env.roles === "tool-call" ? TOOL_CALL_ROLE_DESCRIPTIONS : ROLE_DESCRIPTIONS;
  return {
    name: options.name ?? `${env.name}-${env.roles}`,
    roles: env.agents.map((id) => ({
      id,
      policy: perRole ? id : "shared",
      description: descriptions[id] ?? id,
    })),
    turnOrder: "sequential",
    maxTurns: options.maxTurns ?? env.maxTurns,
  };
}
