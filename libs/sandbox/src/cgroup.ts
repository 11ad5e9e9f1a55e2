/**
 * One cgroup per run: one memory budget for every process of the run together (page cache, tmpfs
 * and shared memory included: RLIMIT_AS is per process and does not count memory that is not
 * mapped), a bound on its processes and threads, and a way to SIGKILL all of them at once.
 *
 * Used by default wherever the kernel offers one this process may write to (`findRunCgroupParent`):
 *
 * - **cgroup v2**: a delegated directory with `memory` and `pids` in its `cgroup.subtree_control`
 *   (named explicitly, or this process's own cgroup when it is so delegated). `memory.max`,
 *   `memory.swap.max` 0, `memory.oom.group` 1 (an OOM ends the whole run), `pids.max`,
 *   `cgroup.kill`.
 * - **cgroup v1**: the `memory` controller (and `pids` where mounted) under this process's own
 *   cgroups. `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes` (no swap), `pids.max`. v1
 *   has no group OOM kill: the kernel kills one process, so the sandbox watches `oom_kill` in
 *   `memory.oom_control` while the run lasts and then kills the rest (`watchesOom`).
 *
 * Where neither can be used, the sandbox divides the budget between processes instead
 * (`limits.ts`, `perProcessShare`).
 *
 * The first process of the run (a `sh` that then execs the rest) moves itself into the run's
 * cgroup(s) before anything else starts, so every later process is born inside.
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
import { join, relative } from "node:path";

/** statfs f_type of cgroup2. */
const CGROUP2_SUPER_MAGIC = 0x63677270;

/** Where the runs' cgroups are made. */
export type RunCgroupParent =
  | { readonly version: 2; readonly dir: string }
  | { readonly version: 1; readonly memoryDir: string; readonly pidsDir: string | null };

/** How a parent reads in messages: `cgroup v1 (/sys/fs/cgroup/memory/x)`. */
export function describeCgroupParent(parent: RunCgroupParent): string {
  return parent.version === 2
    ? `cgroup v2 (${parent.dir})`
    : `cgroup v1 (${parent.memoryDir}${parent.pidsDir === null ? "" : `, ${parent.pidsDir}`})`;
}

/** Why a cgroup v2 `path` cannot hold the runs' cgroups, or null when it can. */
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
  return writableProblem(path);
}

function writableProblem(path: string): string | null {
  try {
    accessSync(path, constants.W_OK);
    return null;
  } catch {
    return `cgroup ${path} is not writable by this user (delegate it, e.g. chown it, or systemd Delegate=yes)`;
  }
}

/** One line of /proc/self/mountinfo that mounts a cgroup hierarchy. */
interface CgroupMount {
  /** The hierarchy's directory the mount shows (its "root" field). */
  readonly root: string;
  readonly mountPoint: string;
  readonly fsType: "cgroup" | "cgroup2";
  /** v1: the controllers in its super options (`memory`, `pids`, …). */
  readonly controllers: readonly string[];
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
const unescapeMountField = (field: string) =>
  field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));

export function parseCgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split("\n")) {
    const [before, after] = line.split(" - ");
    if (before === undefined || after === undefined) continue;
    const fields = before.split(" ");
    const [fsType, , superOptions = ""] = after.split(" ");
    if (fsType !== "cgroup" && fsType !== "cgroup2") continue;
    mounts.push({
      root: unescapeMountField(fields[3] ?? "/"),
      mountPoint: unescapeMountField(fields[4] ?? ""),
      fsType,
      controllers: fsType === "cgroup" ? superOptions.split(",") : [],
    });
  }
  return mounts;
}

/** /proc/self/cgroup: `hierarchy:controllers:path` lines → path per controller ("" for v2). */
export function parseProcCgroup(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (match === null) continue;
    const [, controllers, path] = match;
    for (const controller of controllers!.split(",")) paths.set(controller, path!);
  }
  return paths;
}

/** The directory of cgroup `path` in the mount that shows it, or null when no mount does. */
function directoryOf(mount: CgroupMount | undefined, path: string | undefined): string | null {
  if (mount === undefined || path === undefined) return null;
  const inside = relative(mount.root, path);
  if (inside.startsWith("..")) return null;
  return join(mount.mountPoint, inside);
}

/**
 * The cgroup this process's runs can live under, or why there is none: this process's own
 * cgroup v2 when it is delegated with `memory` and `pids`, else its own v1 `memory` (and `pids`)
 * cgroups when they are writable. The two files are parameters for the tests.
 */
export function findRunCgroupParent(
  procCgroup = readOr("/proc/self/cgroup"),
  mountinfo = readOr("/proc/self/mountinfo"),
): RunCgroupParent | string {
  const paths = parseProcCgroup(procCgroup);
  const mounts = parseCgroupMounts(mountinfo);
  const problems: string[] = [];
  const v2 = directoryOf(
    mounts.find((m) => m.fsType === "cgroup2"),
    paths.get(""),
  );
  if (v2 !== null) {
    const problem = cgroupParentProblem(v2);
    if (problem === null) return { version: 2, dir: v2 };
    problems.push(problem);
  }
  const v1 = (controller: string) =>
    directoryOf(
      mounts.find((m) => m.fsType === "cgroup" && m.controllers.includes(controller)),
      paths.get(controller),
    );
  const memoryDir = v1("memory");
  if (memoryDir === null) {
    problems.push("no cgroup v1 memory controller is mounted for this process");
    return problems.join("; ");
  }
  const memoryProblem = existsSync(join(memoryDir, "memory.limit_in_bytes"))
    ? writableProblem(memoryDir)
    : `cgroup ${memoryDir} has no memory.limit_in_bytes`;
  if (memoryProblem !== null) {
    problems.push(memoryProblem);
    return problems.join("; ");
  }
  const pidsDir = v1("pids");
  return {
    version: 1,
    memoryDir,
    pidsDir: pidsDir !== null && writableProblem(pidsDir) === null ? pidsDir : null,
  };
}

function readOr(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

export interface RunCgroupLimits {
  /** The memory of every process of the run together, bytes. */
  readonly memoryBytes: number;
  /** Processes and threads of the run. */
  readonly tasks: number;
}

/**
 * argv prefix: the first process moves itself into every `procsFiles` (as the user we run as,
 * before any privilege drop), then execs the rest.
 */
export function joinCgroupArgs(procsFiles: readonly string[]): string[] {
  return [
    "/bin/sh",
    "-c",
    // unset PWD: the shell exports it, and bwrap, then the namespace's init (readable as
    // /proc/1/environ inside), would carry the host's working directory.
    'n=$0; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; unset PWD OLDPWD; exec "$@"',
    String(procsFiles.length),
    ...procsFiles,
  ];
}

const POLL_MS = 10;

/** The cgroup (v2) or cgroups (v1: memory, pids) of one run. */
export class RunCgroup {
  private constructor(
    readonly version: 1 | 2,
    /** Every directory of the run: v2 one; v1 the memory one first, then pids. */
    readonly dirs: readonly string[],
  ) {}

  /** Creates `troupe-<random>` under `parent` with the run's limits. */
  static create(parent: RunCgroupParent, limits: RunCgroupLimits): RunCgroup {
    const name = `troupe-${randomBytes(6).toString("hex")}`;
    const dirs =
      parent.version === 2
        ? [join(parent.dir, name)]
        : [parent.memoryDir, ...(parent.pidsDir === null ? [] : [parent.pidsDir])].map((d) => join(d, name));
    const made: string[] = [];
    try {
      for (const dir of dirs) {
        mkdirSync(dir);
        made.push(dir);
      }
      const set = (dir: string, file: string, value: number, optional = false) => {
        if (!optional || existsSync(join(dir, file))) writeFileSync(join(dir, file), String(value));
      };
      const [memory, pids] = dirs as [string, string | undefined];
      if (parent.version === 2) {
        set(memory, "memory.max", limits.memoryBytes);
        set(memory, "memory.swap.max", 0, true);
        set(memory, "memory.oom.group", 1, true);
        set(memory, "pids.max", limits.tasks);
      } else {
        // memsw (memory + swap) must stay ≥ the memory limit, so the memory limit goes first.
        set(memory, "memory.limit_in_bytes", limits.memoryBytes);
        set(memory, "memory.memsw.limit_in_bytes", limits.memoryBytes, true);
        if (pids !== undefined) set(pids, "pids.max", limits.tasks);
      }
    } catch (error) {
      for (const dir of made.reverse()) rmdirSync(dir);
      throw error;
    }
    return new RunCgroup(parent.version, dirs);
  }

  get procsFiles(): string[] {
    return this.dirs.map((dir) => join(dir, "cgroup.procs"));
  }

  /**
   * v1 kills one process at an OOM and lets the rest go on: the sandbox polls `oomKills` while
   * the run lasts and ends it at the first. v2 ends the whole run itself (`memory.oom.group`).
   */
  get watchesOom(): boolean {
    return this.version === 1;
  }

  /** Number of OOM kills in the run so far. */
  oomKills(): number {
    // Both versions count them on an `oom_kill N` line, in different files.
    const file = this.version === 2 ? "memory.events" : "memory.oom_control";
    try {
      return Number(/^oom_kill (\d+)$/m.exec(readFileSync(join(this.dirs[0]!, file), "utf8"))?.[1] ?? 0);
    } catch {
      return 0;
    }
  }

  private pids(): number[] {
    const pids = new Set<number>();
    for (const file of this.procsFiles)
      try {
        for (const pid of readFileSync(file, "utf8").split("\n").filter(Boolean)) pids.add(Number(pid));
      } catch {}
    return [...pids];
  }

  /** SIGKILLs every process of the run (`cgroup.kill` on v2 ≥ 5.14, else one by one). */
  killAll(): void {
    const kill = join(this.dirs[0]!, "cgroup.kill");
    if (this.version === 2 && existsSync(kill)) {
      writeFileSync(kill, "1");
      return;
    }
    for (const pid of this.pids())
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
  }

  /**
   * SIGKILLs every process in the run's cgroups, waits until they are empty, and removes them.
   * Returns the OOM kills of the run.
   */
  async destroy(
    timeoutMs = 10_000,
  ): Promise<{ readonly oomKills: number; readonly survivors: readonly number[] }> {
    const deadline = Date.now() + timeoutMs;
    while (this.pids().length > 0) {
      this.killAll();
      if (Date.now() >= deadline) return { oomKills: this.oomKills(), survivors: this.pids() };
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const oomKills = this.oomKills();
    for (const dir of [...this.dirs].reverse())
      for (let attempt = 0; attempt < 10; attempt++) {
        try {
          rmdirSync(dir);
          break;
        } catch {
          // EBUSY for a moment after the last process left; an empty cgroup left behind costs nothing
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        }
      }
    return { oomKills, survivors: [] };
  }
}
