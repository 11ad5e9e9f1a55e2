/**
 * The bubblewrap command line for one run. Layers, outermost first:
 *
 * 0. (where the kernel offers one) `sh` joining the run's own cgroup(s), then exec'ing the rest
 *    (`cgroup.ts`).
 * 1. `timeout -s KILL` — a deadline that holds even if this Node process dies mid-run.
 * 2. `setpriv` to nobody (only when we are root) — as root, bwrap would keep every capability
 *    inside its namespace and RLIMIT_NPROC does not apply to uid 0 at all; as nobody, neither.
 * 3. `bwrap` — new user/pid/ipc/uts/net/cgroup namespaces, all capabilities dropped, nested user
 *    namespaces disabled (they would let the program mount an unbounded tmpfs), a new session (no
 *    TIOCSTI into our terminal), and a filesystem built from nothing: read-only /usr (+ the
 *    python prefix), a fresh /proc for the new pid namespace, a minimal /dev with a size-limited
 *    /dev/shm, a size-limited tmpfs at /work (also reachable as /tmp), and a read-only root.
 *    Environment cleared. The seccomp filter (`--seccomp`, `seccomp.ts`) is loaded after bwrap's
 *    setup; `--info-fd` reports the namespace's init for the teardown (`teardown.ts`).
 * 4. `prlimit` — rlimits set inside, so RLIMIT_NPROC counts only this sandbox's processes.
 *
 * When the program exits, bwrap's init (pid 1 of the namespace) exits, and the kernel kills every
 * process left in the pid namespace: daemons and `setsid` escapes cannot outlive the run. The
 * teardown after every run makes sure of it without relying on init.
 */
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { joinCgroupArgs } from "./cgroup.ts";
import type { SandboxLimits } from "./types.ts";

export interface BubblewrapTools {
  readonly bwrap: string;
  readonly prlimit: string;
  /** coreutils `timeout`, when present. */
  readonly timeout: string | null;
  /** util-linux `setpriv`, used to drop root to `dropToUid` before bwrap starts. */
  readonly setpriv: string | null;
  /** Host uid/gid to run as when we are root (nobody); null to run as ourselves. */
  readonly dropTo: { readonly uid: number; readonly gid: number } | null;
  /** Extra host directories bound read-only at the same path (e.g. a pyenv prefix). */
  readonly extraReadOnly: readonly string[];
}

/**
 * Host kernel files under /proc that a program has no use for and that tell it about the host:
 * kernel symbols and modules (addresses for exploits), memory maps and allocator state, timers and
 * keys (the list Docker and runc mask, plus kallsyms and modules). Each is bound over with /dev/null:
 * it reads as empty. Only those the running kernel has (a fresh /proc has the same files).
 */
export const MASKED_PROC_FILES: readonly string[] = [
  "/proc/kallsyms",
  "/proc/modules",
  "/proc/kcore",
  "/proc/keys",
  "/proc/key-users",
  "/proc/kmsg",
  "/proc/iomem",
  "/proc/ioports",
  "/proc/vmallocinfo",
  "/proc/slabinfo",
  "/proc/pagetypeinfo",
  "/proc/zoneinfo",
  "/proc/buddyinfo",
  "/proc/timer_list",
  "/proc/sched_debug",
  "/proc/latency_stats",
  "/proc/sysrq-trigger",
  "/proc/config.gz",
];

/** Where the private working directory is mounted inside the sandbox. */
export const SANDBOX_WORKDIR = "/work";
/** uid/gid the program sees (a plain user, not 0, so tools behave as unprivileged). */
const SANDBOX_UID = 1000;
/** Seconds the backstop `timeout` waits past the wall limit before it SIGKILLs the sandbox. */
const BACKSTOP_GRACE_S = 2;

/**
 * Top-level system directories: bound read-only if real, recreated as symlinks if they are the
 * merged-/usr links (/bin -> usr/bin) of modern distributions.
 */
const SYSTEM_DIRS = ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/** The few bits of /etc a dynamically linked interpreter uses; nothing with secrets or users. */
const ETC_FILES = [
  "/etc/alternatives",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/localtime",
];

function systemDirArgs(): string[] {
  const args: string[] = ["--ro-bind", "/usr", "/usr"];
  for (const dir of SYSTEM_DIRS) {
    let stat: ReturnType<typeof lstatSync>;
    try {
      stat = lstatSync(dir);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else if (stat.isDirectory()) args.push("--ro-bind", dir, dir);
  }
  for (const path of ETC_FILES) args.push("--ro-bind-try", path, path);
  return args;
}

export interface SandboxedCommand {
  readonly tools: BubblewrapTools;
  readonly limits: SandboxLimits;
  /** Size of the /work tmpfs in bytes. */
  readonly tmpfsBytes: number;
  /** Files to create in /work, in order; file i is read from fd `firstFileFd + i`. */
  readonly files: readonly string[];
  /** Default 3; 4 when fd 3 is a channel that bwrap passes through to the program untouched. */
  readonly firstFileFd?: number;
  /** Size of the /dev/shm tmpfs in bytes (POSIX shared memory, multiprocessing's semaphores). */
  readonly shmBytes: number;
  /** fd bwrap reads the seccomp BPF program from (`--seccomp`); null for no filter. */
  readonly seccompFd: number | null;
  /** fd bwrap writes its JSON report to (`--info-fd`: init's host pid, namespace inodes); null for none. */
  readonly infoFd: number | null;
  /** `cgroup.procs` of the run's own cgroup(s) (v2: one; v1: memory, pids), which the first process joins. */
  readonly cgroupProcs?: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly argv: readonly string[];
}

export function prlimitArgs(prlimit: string, limits: SandboxLimits, extraProcesses: number): string[] {
  return [
    prlimit,
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.processes + extraProcesses}`,
    `--fsize=${limits.fileBytes}`,
    `--nofile=${limits.openFiles}`,
    "--core=0",
    "--",
  ];
}

/** The full argv (program first) that runs `argv` in a fresh sandbox. */
export function bubblewrapCommand(spec: SandboxedCommand): string[] {
  const { tools, limits } = spec;
  const outer: string[] = spec.cgroupProcs?.length ? joinCgroupArgs(spec.cgroupProcs) : [];
  if (tools.timeout !== null) {
    const seconds = Math.ceil(limits.wallMs / 1000) + BACKSTOP_GRACE_S;
    outer.push(tools.timeout, "-s", "KILL", `${seconds}s`);
  }
  if (tools.dropTo !== null) {
    if (tools.setpriv === null) throw new Error("sandbox: running as root needs util-linux's setpriv");
    const { uid, gid } = tools.dropTo;
    outer.push(tools.setpriv, `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--inh-caps=-all", "--");
  }

  const bwrap: string[] = [
    tools.bwrap,
    "--unshare-all", // user(try), pid, ipc, net, uts, cgroup(try)
    "--unshare-user",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_UID),
    "--hostname",
    "sandbox",
    ...systemDirArgs(),
  ];
  // Loaded by bwrap after its own setup, right before it execs init's wait loop and the program.
  if (spec.seccompFd !== null) bwrap.push("--seccomp", String(spec.seccompFd));
  if (spec.infoFd !== null) bwrap.push("--info-fd", String(spec.infoFd));
  for (const dir of tools.extraReadOnly) bwrap.push("--ro-bind", dir, dir);
  // /dev/shm: its own size-limited tmpfs (a submount, so /dev itself stays read-only).
  bwrap.push("--proc", "/proc", "--dev", "/dev");
  bwrap.push("--size", String(spec.shmBytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev");
  // The fresh /proc still shows the host kernel's files; a program has no use for them.
  for (const path of MASKED_PROC_FILES) if (existsSync(path)) bwrap.push("--ro-bind", "/dev/null", path);
  bwrap.push("--size", String(spec.tmpfsBytes), "--tmpfs", SANDBOX_WORKDIR);
  bwrap.push("--symlink", SANDBOX_WORKDIR, "/tmp");
  const made = new Set<string>();
  spec.files.forEach((name, i) => {
    const parts = name.split("/");
    for (let depth = 1; depth < parts.length; depth++) {
      const dir = `${SANDBOX_WORKDIR}/${parts.slice(0, depth).join("/")}`;
      if (!made.has(dir)) bwrap.push("--dir", dir);
      made.add(dir);
    }
    bwrap.push(
      "--perms",
      "0644",
      "--file",
      String((spec.firstFileFd ?? 3) + i),
      `${SANDBOX_WORKDIR}/${name}`,
    );
  });
  bwrap.push("--remount-ro", "/", "--chdir", SANDBOX_WORKDIR, "--clearenv");
  for (const [key, value] of Object.entries(spec.env)) bwrap.push("--setenv", key, value);
  bwrap.push("--");

  // +1: bwrap's init (pid 1 of the namespace) runs as the same user and counts against NPROC.
  return [...outer, ...bwrap, ...prlimitArgs(tools.prlimit, limits, 1), ...spec.argv];
}
