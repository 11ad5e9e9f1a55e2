/**
 * What a role protocol is, and the step machinery every protocol shares. A protocol names its
 * agents, renders each one's observation and applies each one's action to the step in progress;
 * the environment (game-environment.ts) checks the actions, runs them in the protocol's role order
 * and closes the step (turns, end of episode, failure penalty).
 *
 * Rewards, per step: team reward = what the executed moves earned (step costs, game-specific move
 * rewards, the invalid penalty, +solved, +optimal bonus, −failure when the episode ends unsolved);
 * local reward of each acting role = its own plan's progress (`planProgress`, in [-1, 1]).
 * Executed moves are committed: each plan continues from where the previous one stopped.
 */
import type { AgentId, Observation } from "@troupe/core";
import type { GameState, ParsedEpisodeOptions, RolesVariant } from "../episode.ts";
import { executePlan, type Game, planProgress } from "../game.ts";

/** The state fields a step changes, on a copy: the input state is never touched. */
export interface Draft<Board> {
  board: Board;
  movesTaken: number;
  solved: boolean;
  report: string | null;
  toolOutput: string | null;
  /** Team reward of the step so far. */
  team: number;
  local: Record<AgentId, number>;
  info: Record<string, unknown>;
}

/** One step in progress: the game, the episode's options, the puzzle and the draft. */
export interface Step<Puzzle, Board, Move> {
  readonly game: Game<Puzzle, Board, Move>;
  readonly options: ParsedEpisodeOptions;
  readonly puzzle: Puzzle;
  readonly draft: Draft<Board>;
}

export interface RoleProtocol {
  readonly roles: RolesVariant;
  /** The agents in turn order. */
  readonly agents: readonly AgentId[];
  /** What each role does, for the team (`envTeam`). */
  readonly descriptions: Readonly<Record<AgentId, string>>;
  /** Roles that may execute a plan in one step: sets the team reward bounds. */
  readonly planners: number;
  /** Whether its prompts are the compact observation, the only one with hint lines. */
  readonly compact: boolean;
  /** Whether `act` returns a promise (it runs programs): then every step is asynchronous. */
  readonly async: boolean;
  /** Throws, naming the option, when the game or the options cannot run the protocol. */
  check(game: Game<unknown, unknown, unknown>, options: ParsedEpisodeOptions): void;
  observe<Puzzle, Board>(
    game: Game<Puzzle, Board, unknown>,
    state: GameState<Puzzle, Board>,
    agent: AgentId,
    options: ParsedEpisodeOptions,
  ): Observation;
  /** One acting agent's text applied to the step. */
  act<Puzzle, Board, Move>(
    step: Step<Puzzle, Board, Move>,
    agent: AgentId,
    text: string,
  ): void | Promise<void>;
}

/** A role's local reward for a plan it could not give: no progress, the invalid penalty. */
export const invalidPlanReward = (invalidPenalty: number) => planProgress(1, 1, true, invalidPenalty);

/** What a plan executed from `board` would do, as `planProgress` (the board is not changed). */
export function planProgressFrom<Puzzle, Board, Move>(
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

/** Parses and executes an acting role's plan from the draft's board; the draft takes its outcome. */
export function commitPlan<Puzzle, Board, Move>(
  { game, options, puzzle, draft }: Step<Puzzle, Board, Move>,
  agent: AgentId,
  text: string,
): void {
  const { rewards } = game;
  const moves = game.parsePlan(text);
  if (moves === null) {
    draft.team += rewards.invalid;
    draft.local[agent] = invalidPlanReward(rewards.invalid);
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

function shorten(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}
