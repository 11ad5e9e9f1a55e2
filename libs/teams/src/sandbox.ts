/**
 * Serving a team whose environment runs the agents' code needs a sandbox (a `CodeRunner` from
 * @troupe/sandbox); where none is available (Workers, or a server started without one) the API
 * refuses the team with 501 instead of running untrusted code unsandboxed. Which environments
 * run code is each environment's own registry entry's answer (`needsSandbox` in @troupe/envs).
 */
import { needsSandbox as entryNeedsSandbox, environmentModule, type FileRef } from "@troupe/envs/registry";

/** A published team's environment section: a registry name, its options, and its own module if any. */
interface ManifestEnvironment {
  readonly name: string;
  readonly options: Readonly<Record<string, unknown>>;
  readonly module?: FileRef | undefined;
}

/**
 * Whether the team's environment runs the agents' code. A team trained on an environment of its
 * own is refused (501) when this process has not loaded that module with the manifest's content
 * (a Worker that did not bundle it; Node loads it through the registry's prepareEnvironment).
 */
export function needsSandbox(environment: ManifestEnvironment): boolean {
  checkModuleLoaded(environment);
  let answer = answered.get(environment);
  if (answer === undefined) {
    answer = entryNeedsSandbox(environment);
    answered.set(environment, answer);
  }
  return answer;
}

/**
 * The registry's answer per environment section: it validates the options with zod, ~20 µs that a
 * server would pay on every request for the same manifest object (the API's team cache hands out
 * one per team for seconds at a time). The answer depends on the section's name and options
 * alone, which nothing changes after a manifest is read.
 */
const answered = new WeakMap<ManifestEnvironment, boolean>();

/** UnsupportedTeamError unless the environment's own module (if any) is loaded with the recorded content. */
export function checkModuleLoaded(environment: ManifestEnvironment, label = "this team"): void {
  const module = environment.module;
  if (module !== undefined && environmentModule(environment.name)?.sha256 !== module.sha256) {
    throw new UnsupportedTeamError(
      `${label}: environment "${environment.name}" comes from ${module.path} (sha256 ${module.sha256.slice(0, 12)}…), which this server has not loaded`,
    );
  }
}

/** A team that cannot be served here, e.g. it runs code and no sandbox is available (HTTP 501). */
export class UnsupportedTeamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsupportedTeamError";
  }
}
