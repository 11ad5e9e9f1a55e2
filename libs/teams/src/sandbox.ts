/**
 * Serving a team whose environment runs the agents' code needs a sandbox (a `CodeRunner` from
 * @troupe/sandbox); where none is available (Workers, or a server started without one) the API
 * refuses the team with 501 instead of running untrusted code unsandboxed. Which environments
 * run code is each environment's own registry entry's answer (`needsSandbox` in @troupe/envs).
 */
export { needsSandbox } from "@troupe/envs/registry";

/** A team that cannot be served here, e.g. it runs code and no sandbox is available (HTTP 501). */
export class UnsupportedTeamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedTeamError";
  }
}
