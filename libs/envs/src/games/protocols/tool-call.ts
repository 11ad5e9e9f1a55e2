/**
 * The `tool-call` protocol: the tool roles in the compact protocol's form, for games with a
 * `toolCall`; turn = tool then plan:
 *  - `tool` sees the compact observation and answers one short command (Plan-Path: `path R C`);
 *    the environment runs it and shows its output line to the plan agent. It moves nothing; its
 *    local reward is 1 when the path it got reaches the goal, 0 when it does not (or it got none),
 *    and the invalid penalty when the command could not be run;
 *  - `plan` sees the compact observation and the tool's output, and answers a plan as the compact
 *    planner does; the plan is executed from the board.
 */
import type { AgentId } from "@troupe/core";
import { executePlan } from "../game.ts";
import { compactProtocol } from "./compact.ts";
import { commitPlan, invalidPlanReward, planProgressFrom, type RoleProtocol, type Step } from "./protocol.ts";
import { TOOL_AGENTS } from "./python-tool.ts";

/** The `tool-call` roles' descriptions (the same agent ids as the Python tool roles). */
export const TOOL_CALL_ROLE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  tool: "calls the environment's tool with a short command; its output is shown to the plan agent",
  plan: "gives the plan from the board and the tool's output (compact protocol); the environment executes it",
};

/** What pads a tool call's plan to `toolWidth` (every game's plan parser skips it). */
const TOOL_PADDING = ".";

/**
 * Runs the tool agent's command; its output line goes to the plan agent. Local reward: the
 * invalid penalty when the command could not be run; else for a tool whose calls plan to a target
 * (`GameToolCall.plans` "solution") 1 when the path it gave reaches the goal (executed from the
 * board, stopping there), 0 when it gave none or one that does not; for one whose calls plan a
 * part ("part"), the progress that part would make (`planProgressFrom`).
 */
function callTool<Puzzle, Board, Move>(
  { game, options, puzzle, draft }: Step<Puzzle, Board, Move>,
  agent: AgentId,
  text: string,
): void {
  const tool = game.toolCall!;
  const call = tool.run(puzzle, draft.board, text);
  draft.toolOutput =
    call.moves !== null && options.toolWidth !== undefined
      ? call.output.padEnd(options.toolWidth, TOOL_PADDING)
      : call.output;
  const reachesGoal =
    call.moves !== null && executePlan(game, puzzle, draft.board, call.moves, options.maxPlanLength).solved;
  if (call.bad) draft.local[agent] = invalidPlanReward(game.rewards.invalid);
  else if (tool.plans !== "part") draft.local[agent] = reachesGoal ? 1 : 0;
  else if (call.moves === null) draft.local[agent] = 0;
  else draft.local[agent] = planProgressFrom(game, puzzle, draft.board, call.moves, options.maxPlanLength);
  draft.info[agent] = { command: text, output: call.output, bad: call.bad, reachesGoal };
}

export const toolCallProtocol: RoleProtocol = {
  roles: "tool-call",
  agents: TOOL_AGENTS,
  descriptions: TOOL_CALL_ROLE_DESCRIPTIONS,
  planners: 1,
  compact: true,
  async: false,
  check(game) {
    if (game.toolCall === undefined) {
      throw new Error(
        `${game.name} options: roles: "tool-call" needs a game tool, and ${game.name} offers none`,
      );
    }
  },
  observe: compactProtocol.observe,
  act: (step, agent, text) =>
    agent === "tool" ? callTool(step, agent, text) : commitPlan(step, agent, text),
};
