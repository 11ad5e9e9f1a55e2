/**
 * Which environments execute the agents' code. Serving such a team needs a sandbox (a
 * `CodeRunner` from @troupe/sandbox); where none is available (Workers, or a server started
 * without one) the API refuses the team with 501 instead of running untrusted code unsandboxed.
 */
import type { TeamManifest } from "./manifest.ts";

/** Environments whose agents always write code that the environment runs. */
export const CODE_EXECUTING_ENVIRONMENTS: ReadonlySet<string> = new Set([
  "humaneval-coder-tester",
  "humaneval-aux-main",
  "gsm8k-reasoner-tool",
]);

/** Puzzle games run code only in the `tool` role protocol (a tool agent writes Python). */
const GAMES_WITH_TOOL_ROLES: ReadonlySet<string> = new Set(["plan-path", "sokoban", "sudoku"]);

/** Whether serving this environment runs code written by an agent (and so needs a sandbox). */
export function needsSandbox(environment: TeamManifest["environment"]): boolean {
  if (CODE_EXECUTING_ENVIRONMENTS.has(environment.name)) return true;
  return GAMES_WITH_TOOL_ROLES.has(environment.name) && environment.options.roles === "tool";
}

/** A team that cannot be served here, e.g. it runs code and no sandbox is available (HTTP 501). */
export class UnsupportedTeamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedTeamError";
  }
}
