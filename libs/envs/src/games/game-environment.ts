/**
 * `gameEnvironment`: the `Environment` of one game under one role protocol. All protocols share
 * the state, the simulator and the team reward; they differ in who speaks and what the prompts look
 * like, one a file in protocols/:
 *   compact    planner then fixer, compact prompts (a protocol a tiny byte-level model can learn)
 *   single     the planner alone (the compact protocol's single-agent baseline)
 *   tool       tool (Python in the sandbox) then plan (the Stronger-MAS / AT-GRPO roles)
 *   tool-call  tool (one short command the game runs) then plan, compact prompts
 * The episode ends when the puzzle is solved, when it becomes unsolvable (deadlock), or when the
 * last role of turn `maxTurns` has acted.
 */
import type { AgentId, JointAction, Split, StepResult, Task } from "@troupe/core";
import { gameDemo } from "./demo.ts";
import {
  type EpisodeOptions,
  type GameEnvironment,
  type GameState,
  type ParsedEpisodeOptions,
  parseEpisodeOptions,
  type RolesVariant,
} from "./episode.ts";
import type { Game, GameRewards } from "./game.ts";
import { compactProtocol } from "./protocols/compact.ts";
import type { Draft, RoleProtocol, Step } from "./protocols/protocol.ts";
import { pythonToolProtocol } from "./protocols/python-tool.ts";
import { singleProtocol } from "./protocols/single.ts";
import { toolCallProtocol } from "./protocols/tool-call.ts";

/** The protocol of each `roles` option. */
export const ROLE_PROTOCOLS: Readonly<Record<RolesVariant, RoleProtocol>> = {
  compact: compactProtocol,
  single: singleProtocol,
  tool: pythonToolProtocol,
  "tool-call": toolCallProtocol,
};

export interface GameEnvironmentSpec<Puzzle, Board, Move> {
  readonly game: Game<Puzzle, Board, Move>;
  readonly options: EpisodeOptions;
  /** Checks a task payload and returns it as a puzzle (throws naming the bad field). */
  readonly checkPuzzle: (payload: unknown, taskId: string) => Puzzle;
  readonly generateTasks: (split: Split, count: number, seed: number) => Task<Puzzle>[];
}

/** Refuses options the game or the protocol cannot run, naming the option. */
function checkOptions(
  game: Game<unknown, unknown, unknown>,
  protocol: RoleProtocol,
  options: ParsedEpisodeOptions,
) {
  protocol.check(game, options);
  if (options.hints.length > 0 && game.hint === undefined) {
    throw new Error(`${game.name} options: hints: ${game.name} offers no hints (only the board picture)`);
  }
  if (options.hints.length > 0 && !protocol.compact) {
    throw new Error(
      `${game.name} options: hints are lines of the compact observation, which roles "${options.roles}" does not use`,
    );
  }
}

/** The agent, or an error naming the protocol's agents. */
function checkAgent(game: Game<unknown, unknown, unknown>, protocol: RoleProtocol, agent: AgentId): AgentId {
  if (!protocol.agents.includes(agent)) {
    throw new Error(
      `${game.name} (${protocol.roles} roles): unknown agent "${agent}"; agents: ${protocol.agents.join(", ")}`,
    );
  }
  return agent;
}

/** The acting agents in the protocol's role order, whatever the key order of `actions`. */
function actingAgents<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  protocol: RoleProtocol,
  state: GameState<Puzzle, Board>,
  actions: JointAction,
): AgentId[] {
  if (state.done) throw new Error(`${game.name}: step called on a finished episode`);
  const acting = Object.keys(actions);
  for (const agent of acting) checkAgent(game as Game<unknown, unknown, unknown>, protocol, agent);
  if (acting.length === 0) throw new Error(`${game.name}: step needs at least one agent's action`);
  return protocol.agents.filter((a) => a in actions);
}

function newDraft<Board>(state: GameState<unknown, Board>): Draft<Board> {
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

/** Turn accounting, end of episode and failure penalty: the step's result. */
function finishStep<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  protocol: RoleProtocol,
  maxTurns: number,
  state: GameState<Puzzle, Board>,
  draft: Draft<Board>,
  acting: readonly AgentId[],
): StepResult<GameState<Puzzle, Board>> {
  const turn = state.turn + (acting.includes(protocol.agents.at(-1)!) ? 1 : 0);
  let done = draft.solved;
  if (!draft.solved) {
    const deadlock = game.remaining(state.puzzle, draft.board) === Number.POSITIVE_INFINITY;
    if (deadlock || turn >= maxTurns) {
      done = true;
      draft.team += game.rewards.failure;
      draft.info.failure = deadlock ? "deadlock" : "out of turns";
      if (deadlock) draft.report = `${draft.report ?? ""}; deadlock`;
    }
  }
  const { board, movesTaken, solved, report, toolOutput } = draft;
  return {
    state: { puzzle: state.puzzle, board, turn, movesTaken, solved, done, report, toolOutput },
    teamReward: draft.team,
    localRewards: draft.local,
    done,
    success: draft.solved,
    info: draft.info,
  };
}

/**
 * The team reward's range over one step. One plan: at most maxPlanLength step costs, its move
 * rewards, at most one invalid penalty; `planners` plans in a step, then solved or failure.
 */
export function teamRewardBounds(
  rewards: GameRewards,
  planRewardRange: readonly [number, number],
  maxPlanLength: number,
  planners: number,
): readonly [number, number] {
  const [moveLo, moveHi] = planRewardRange;
  const L = maxPlanLength;
  const planLow = L * Math.min(0, rewards.step) + Math.min(0, moveLo) + Math.min(0, rewards.invalid);
  const planHigh = L * Math.max(0, rewards.step) + Math.max(0, moveHi);
  return [
    planners * planLow + Math.min(0, rewards.failure),
    planners * planHigh + Math.max(0, rewards.solved) + Math.max(0, rewards.optimalBonus),
  ];
}

/** Builds the environment for one game and the role protocol its options name. */
export function gameEnvironment<Puzzle, Board, Move>(
  spec: GameEnvironmentSpec<Puzzle, Board, Move>,
): GameEnvironment<Puzzle, Board> {
  type State = GameState<Puzzle, Board>;
  const { game } = spec;
  const anyGame = game as Game<unknown, unknown, unknown>;
  const options = parseEpisodeOptions(game.name, spec.options);
  const protocol = ROLE_PROTOCOLS[options.roles];
  checkOptions(anyGame, protocol, options);

  /** The acting agents' actions in turn; the rest of a step is skipped once the puzzle is solved. */
  function step(state: State, actions: JointAction) {
    const acting = actingAgents(game, protocol, state, actions);
    const draft = newDraft(state);
    const current: Step<Puzzle, Board, Move> = { game, options, puzzle: state.puzzle, draft };
    const finish = () => finishStep(game, protocol, options.maxTurns, state, draft, acting);
    if (protocol.async) {
      return (async () => {
        for (const agent of acting) {
          if (draft.solved) break;
          await protocol.act(current, agent, actions[agent]!);
        }
        return finish();
      })();
    }
    for (const agent of acting) {
      if (draft.solved) break;
      void protocol.act(current, agent, actions[agent]!);
    }
    return finish();
  }

  return {
    name: game.name,
    agents: protocol.agents,
    roles: options.roles,
    maxTurns: options.maxTurns,
    rewardBounds: {
      team: teamRewardBounds(
        game.rewards,
        game.planRewardRange(options.maxPlanLength),
        options.maxPlanLength,
        protocol.planners,
      ),
      local: [-1, 1] as const,
    },
    // The optimal number of moves from the start (plan-path, sokoban: stored with the puzzle;
    // sudoku: the cells left to fill).
    difficulty(task: Task<Puzzle>): number {
      const puzzle = spec.checkPuzzle(task.payload, task.id);
      return game.optimalMoves(puzzle) ?? game.remaining(puzzle, game.initialBoard(puzzle));
    },
    reset(task: Task<Puzzle>): State {
      const puzzle = spec.checkPuzzle(task.payload, task.id);
      const board = game.initialBoard(puzzle);
      return {
        puzzle,
        board,
        turn: 0,
        movesTaken: 0,
        solved: false,
        done: false,
        report: null,
        toolOutput: null,
      };
    },
    observe: (state: State, agent: AgentId) =>
      protocol.observe(game, state, checkAgent(anyGame, protocol, agent), options),
    step,
    generateTasks: (split, count, generate = {}) =>
      spec.generateTasks(split, count, generate.seed ?? options.seed),
    // Only the first maxPlanLength moves of a plan execute, so a demonstration teaches no more.
    demo: (task, state, agent) => gameDemo(game, task, state, agent, options.maxPlanLength, options.roles),
  };
}
