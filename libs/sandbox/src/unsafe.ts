/**
 * The `unsafe: true` fallback: rlimits only, no namespaces. Used where bubblewrap cannot run
 * (macOS, containers without user namespaces) and the caller has said the code is not hostile.
 *
 * The program runs as this user, in a host temp dir that is deleted afterwards, with a cleared
 * environment and its own process group (killed at the deadline). It CAN read every file this
 * user can, reach the network, and escape the process group with setsid(). As root, RLIMIT_NPROC
 * does not apply, so a fork bomb is only bounded by the wall clock.
 *
 * Limits are applied by a tiny python launcher (portable: macOS has no prlimit) that calls
 * setrlimit and then execs the program, so the limits bind the program and not this Node process.
 */
import type { SandboxLimits } from "./types.ts";

const LAUNCHER = `
import os, resource, sys
limits = {"RLIMIT_CPU": (int(sys.argv[1]), int(sys.argv[1]) + 1), "RLIMIT_AS": int(sys.argv[2]),
          "RLIMIT_NPROC": int(sys.argv[3]), "RLIMIT_FSIZE": int(sys.argv[4]),
          "RLIMIT_NOFILE": int(sys.argv[5]), "RLIMIT_CORE": 0}
for name, value in limits.items():
    pair = value if isinstance(value, tuple) else (value, value)
    if hasattr(resource, name):
        try:
            resource.setrlimit(getattr(resource, name), pair)
        except (ValueError, OSError):
            pass  # e.g. RLIMIT_AS on macOS: not enforced there, documented as such
os.execvp(sys.argv[6], sys.argv[6:])
`;

/** argv prefix that applies `limits` and then execs the rest of the argv. */
export function launcherArgs(python: string, limits: SandboxLimits): string[] {
  return [
    python,
    "-I",
    "-S",
    "-c",
    LAUNCHER,
    String(limits.cpuSeconds),
    String(limits.memoryBytes),
    String(limits.processes),
    String(limits.fileBytes),
    String(limits.openFiles),
  ];
}
