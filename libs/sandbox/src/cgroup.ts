/**
 * Optional: one cgroup v2 per run, where a delegated, writable cgroup v2 directory with the memory
 * and pids controllers is given (`createSandbox({ cgroup })` or `TROUPE_SANDBOX_CGROUP`). It adds
 * what rlimits cannot do:
 *
 * - `memory.max`: one memory budget for the whole run, every process together, page cache, tmpfs
 *   and shared memory included (RLIMIT_AS is per process and does not count memory that is not
 *   mapped). `memory.oom.group`: an OOM ends the whole run, reported as `memory-limit`.
 * - `pids.max`: processes and threads of the whole run, bwrap's own included.
 * - `cgroup.kill`: every process of the run, in or out of its namespaces, SIGKILLed at once.
 *
 * The first process of the run (a `sh` that then execs the rest) moves itself into the run's
 * cgroup before anything else starts, so every later process is born inside it.
 *
 * Not used by default: a cgroup v2 hierarchy is only writable where someone delegated it (a
 * systemd unit with `Delegate=yes`, a container with its own cgroup namespace, root), and where it
 * is not, the PID-namespace teardown (`teardown.ts`) and the seccomp filter already end every run
 * and refuse memfd. The machine this was written on mounts cgroup v1 controllers (the v2 hierarchy
 * has none), so this path is exercised by `test/cgroup.test.ts` only where `TROUPE_SANDBOX_CGROUP`
 * names a usable directory.
 */
import { randomBytes } from "node:crypto";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  rmdirSync,
  statfsSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

/** statfs f_type of cgroup2. */
const CGROUP2_SUPER_MAGIC = 0x63677270;

/** Why `path` cannot hold the runs' cgroups, or null when it can. */
export function cgroupParentProblem(path: string): string | null {
  let type: number;
  try {
    type = statfsSync(path).type;
  } catch (error) {
    return `cgroup ${path}: ${(error as Error).message}`;
  }
  if (type !== CGROUP2_SUPER_MAGIC) return `cgroup ${path} is not in a cgroup v2 hierarchy`;
  let enabled: string[];
  try {
    enabled = readFileSync(join(path, "cgroup.subtree_control"), "utf8").trim().split(/\s+/);
  } catch (error) {
    return `cgroup ${path}: ${(error as Error).message}`;
  }
  const missing = ["memory", "pids"].filter((c) => !enabled.includes(c));
  if (missing.length > 0)
    return (
      `cgroup ${path} does not give its children the ${missing.join(" and ")} controller(s) ` +
      `(echo "${missing.map((c) => `+${c}`).join(" ")}" > ${join(path, "cgroup.subtree_control")})`
    );
  try {
    accessSync(path, constants.W_OK);
  } catch {
    return `cgroup ${path} is not writable by this user (delegate it, e.g. chown it, or systemd Delegate=yes)`;
  }
  return null;
}

export interface RunCgroupLimits {
  /** memory.max, bytes. */
  readonly memoryBytes: number;
  /** pids.max: processes and threads. */
  readonly tasks: number;
}

/** argv prefix that moves the first process into `procsFile`'s cgroup, then execs the rest. */
export function joinCgroupArgs(procsFile: string): string[] {
  return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procsFile];
}

const POLL_MS = 10;

/** The cgroup of one run. */
export class RunCgroup {
  private constructor(readonly path: string) {}

  /** Creates `<parent>/troupe-<random>` with the run's limits. */
  static create(parent: string, limits: RunCgroupLimits): RunCgroup {
    const path = join(parent, `troupe-${randomBytes(6).toString("hex")}`);
    mkdirSync(path);
    const cgroup = new RunCgroup(path);
    try {
      writeFileSync(join(path, "memory.max"), String(limits.memoryBytes));
      if (existsSync(join(path, "memory.swap.max"))) writeFileSync(join(path, "memory.swap.max"), "0");
      if (existsSync(join(path, "memory.oom.group"))) writeFileSync(join(path, "memory.oom.group"), "1");
      writeFileSync(join(path, "pids.max"), String(limits.tasks));
    } catch (error) {
      rmdirSync(path);
      throw error;
    }
    return cgroup;
  }

  get procsFile(): string {
    return join(this.path, "cgroup.procs");
  }

  /** Number of OOM kills in the run so far. */
  oomKills(): number {
    try {
      const events = readFileSync(join(this.path, "memory.events"), "utf8");
      return Number(/^oom_kill (\d+)$/m.exec(events)?.[1] ?? 0);
    } catch {
      return 0;
    }
  }

  private populated(): boolean {
    try {
      return /^populated 1$/m.test(readFileSync(join(this.path, "cgroup.events"), "utf8"));
    } catch {
      return false;
    }
  }

  private pids(): number[] {
    try {
      return readFileSync(this.procsFile, "utf8").split("\n").filter(Boolean).map(Number);
    } catch {
      return [];
    }
  }

  /**
   * SIGKILLs every process in the cgroup (`cgroup.kill`, or one by one on kernels before 5.14),
   * waits until it is empty, and removes it. Returns the OOM kills of the run.
   */
  async destroy(
    timeoutMs = 10_000,
  ): Promise<{ readonly oomKills: number; readonly survivors: readonly number[] }> {
    const kill = join(this.path, "cgroup.kill");
    const hasKill = existsSync(kill);
    const deadline = Date.now() + timeoutMs;
    while (this.populated()) {
      if (hasKill) writeFileSync(kill, "1");
      else
        for (const pid of this.pids())
          try {
            process.kill(pid, "SIGKILL");
          } catch {}
      if (Date.now() >= deadline) return { oomKills: this.oomKills(), survivors: this.pids() };
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const oomKills = this.oomKills();
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        rmdirSync(this.path);
        break;
      } catch {
        // EBUSY for a moment after the last process left; an empty cgroup left behind costs nothing
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    }
    return { oomKills, survivors: [] };
  }
}
