/**
 * The `compact` protocol, one a tiny byte-level model can learn; turn = planner then fixer:
 *  - `planner` sees the board (one row per line) and answers with a plan only (e.g. `UURDL`);
 *  - the environment executes it and reports where it failed (`UURDL: blocked at step 3 (2,4)`);
 *  - `fixer` sees the new board and the report, and answers with the corrected plan from there.
 * Its observation, `compactObservation`, is also the `single` and `tool-call` protocols'.
 */
import { type AgentId, type Observation, userObservation } from "@troupe/core";
import type { GameState, ReportLine } from "../episode.ts";
import type { CompactHint, Game } from "../game.ts";
import { commitPlan, type RoleProtocol } from "./protocol.ts";

export const COMPACT_AGENTS: readonly AgentId[] = ["planner", "fixer"];

export const COMPACT_ROLE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  planner: "proposes a plan from the board (compact protocol)",
  fixer: "corrects the plan after the environment reports where it failed (compact protocol)",
};

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

export const compactProtocol: RoleProtocol = {
  roles: "compact",
  agents: COMPACT_AGENTS,
  descriptions: COMPACT_ROLE_DESCRIPTIONS,
  planners: 2, // both roles may act in one (parallel) step
  compact: true,
  async: false,
  check: () => {},
  observe: (game, state, agent, options) =>
    compactObservation(game, state, agent, options.hints, options.reportLine),
  act: commitPlan,
};
