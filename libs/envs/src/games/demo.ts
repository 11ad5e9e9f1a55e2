/** The solver's demonstrations: each role's next action as a solver would give it. */
import { type AgentId, canonicalJson, type Task } from "@troupe/core";
import type { GameState, RolesVariant } from "./episode.ts";
import type { Game } from "./game.ts";
import { planProgressFrom } from "./protocols/protocol.ts";

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
    if (part !== null && planProgressFrom(game, state.puzzle, state.board, part, maxPlanLength) > 0)
      return game.formatPlan(part.slice(0, maxPlanLength));
  }
  const moves = game.solve(state.puzzle, state.board);
  if (moves === null) throw new Error(`${game.name} demo: task ${task.id} cannot be solved from this board`);
  const plan = game.formatPlan(moves.slice(0, maxPlanLength));
  if (agent === "planner" || agent === "fixer") return plan;
  if (agent === "plan") return roles === "tool-call" ? plan : `#### ${plan}`;
  throw new Error(`${game.name} demo: unknown agent "${agent}"`);
}
