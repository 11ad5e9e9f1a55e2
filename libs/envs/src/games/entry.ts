/**
 * Plan-Path, Sokoban and Sudoku in the registry. Their options are the game's own (grid size,
 * generation, rewards) plus the episode options (roles protocol, turns, hints); `roles: tool` runs
 * the tool agent's Python, so only that protocol needs the sandbox. Solvers give demonstrations.
 * The answer is the final board; Plan-Path's also replays the path cell by cell.
 */
import type { CodeRunner } from "@troupe/sandbox";
import type { z } from "zod";
import type { BoardAnswer, ExecutedAction, PlanPathAnswer, ToolCallTurn } from "../answer.ts";
import { defineEnvironment } from "../entry.ts";
import { envTeam } from "./env-team.ts";
import type { GameState } from "./episode.ts";
import { type Pos, parseDirections, samePos, step } from "./grid.ts";
import { PlanPathOptionsSchema, planPathEnv, renderPlanPath } from "./plan-path.ts";
import type { PlanPathBoard, PlanPathPuzzle } from "./plan-path-puzzle.ts";
import { renderSokoban, SokobanOptionsSchema, sokobanEnv } from "./sokoban.ts";
import { renderSudoku, SudokuOptionsSchema, sudokuEnv } from "./sudoku.ts";

type GameFactory = typeof planPathEnv | typeof sokobanEnv | typeof sudokuEnv;

function gameEntry<S extends z.ZodObject>(
  description: string,
  schema: S,
  factory: GameFactory,
  render: (state: unknown, actions: readonly ExecutedAction[]) => PlanPathAnswer | BoardAnswer,
) {
  return defineEnvironment({
    description,
    // The runner is not an option: the registry passes the sandbox when `needsSandbox` says so.
    options: schema.omit({ runner: true } as never).strict() as unknown as z.ZodObject,
    needsSandbox: (options) => (options as { roles?: string }).roles === "tool",
    build(options, runner: CodeRunner | undefined) {
      const env = factory({ ...(options as object), ...(runner ? { runner } : {}) } as never) as ReturnType<
        typeof planPathEnv
      >;
      return {
        env: env as never,
        generateTasks: (split, count, seed) => env.generateTasks(split, count, { seed }),
        team: (specialisation) => envTeam(env, { policies: specialisation }),
        demo: (task, state, agent) => env.demo(task as never, state as never, agent),
      };
    },
    render,
  });
}

/** The answer of a board game: its final board as `render` draws it, and each turn's tool call. */
function boardAnswer<Puzzle, Board>(
  kind: "sokoban" | "sudoku",
  render: (puzzle: Puzzle, board: Board) => string,
) {
  return (state: unknown, actions: readonly ExecutedAction[]): BoardAnswer => {
    const s = state as GameState<Puzzle, Board>;
    const calls = toolCallTurns(actions);
    return {
      kind,
      board: render(s.puzzle, s.board).split("\n"),
      movesTaken: s.movesTaken,
      report: s.report,
      ...(calls.length > 0 ? { calls } : {}),
    };
  };
}

function planPathAnswer(state: unknown, actions: readonly ExecutedAction[]): PlanPathAnswer {
  const { puzzle, board, ...s } = state as GameState<PlanPathPuzzle, PlanPathBoard>;
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
  const consistent = samePos(path.at(-1)!, board.pos) && moves.length === s.movesTaken;
  const calls = toolCallTurns(actions);
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
    report: s.report,
    ...(calls.length > 0 ? { calls } : {}),
  };
}

/** The `tool-call` roles' turns: a tool call (its info has the output line) opens one, the plan closes it. */
function toolCallTurns(actions: readonly ExecutedAction[]): ToolCallTurn[] {
  const turns: { command: string | null; output: string | null; plan: string | null }[] = [];
  if (
    !actions.some((a) => a.agent === "tool" && typeof (a.info as { output?: unknown })?.output === "string")
  ) {
    return turns;
  }
  for (const action of actions) {
    if (action.agent === "tool") {
      const output = (action.info as { output?: unknown } | undefined)?.output;
      turns.push({ command: action.text, output: typeof output === "string" ? output : null, plan: null });
    } else if (action.agent === "plan") {
      const last = turns.at(-1);
      if (last !== undefined && last.plan === null) last.plan = action.text;
      else turns.push({ command: null, output: null, plan: action.text });
    }
  }
  return turns;
}

export const planPathEntry = gameEntry(
  "reach the goal on a grid maze (planner + fixer, tool + plan, a single planner, or tool calls + plan)",
  PlanPathOptionsSchema,
  planPathEnv,
  planPathAnswer,
);

export const sokobanEntry = gameEntry(
  "push every box onto a target (planner + fixer, tool + plan, a single planner, or tool calls + plan)",
  SokobanOptionsSchema,
  sokobanEnv,
  boardAnswer("sokoban", renderSokoban),
);

export const sudokuEntry = gameEntry(
  "fill the Sudoku grid (planner + fixer, tool + plan, a single planner, or tool calls + plan)",
  SudokuOptionsSchema,
  sudokuEnv,
  boardAnswer("sudoku", renderSudoku),
);
