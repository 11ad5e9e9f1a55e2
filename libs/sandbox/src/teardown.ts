/**
 * Ending a sandbox from the outside, without the program's cooperation.
 *
 * bubblewrap puts the program in a new PID namespace whose init (pid 1 inside) is bwrap itself.
 * When that init dies, the kernel SIGKILLs every other process of the namespace and init's exit
 * completes only once they are all gone. So the whole sandbox ends when its init ends, and nothing
 * in it can leave the namespace. bwrap's `--info-fd` tells us init's host pid and the namespace's
 * inode (written by bwrap's monitor before the sandboxed child runs anything, so the program
 * cannot forge it).
 *
 * After every run (ok, error, timeout, output cap, kill) `killPidNamespace` checks whether init is
 * still there and, if so, SIGKILLs it and waits until it is a zombie or gone; while it lingers, it
 * also SIGKILLs every process whose `/proc/PID/ns/pid` is that namespace, every 50 ms. Usually init
 * is already gone (it exits with the program, or dies of its parent-death signal with bwrap's
 * monitor) and this costs one failed `open`, or it is a millisecond from gone. It matters when a
 * program has kept init alive past its monitor: the escape that ptrace made possible (now also
 * denied by the seccomp filter).
 *
 * The namespace is held open (an fd on `/proc/<init>/ns/pid`) while we scan, so its inode cannot be
 * freed and handed to another sandbox's new namespace mid-scan (inode numbers are reused, lowest
 * first). What remains is the classic pid race between reading a process's namespace and killing
 * it, which needs the host's pid counter to wrap within microseconds.
 */
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readlinkSync } from "node:fs";

/** bubblewrap's `--info-fd` report, the parts we use. */
export interface SandboxInfo {
  /** Host pid of the namespace's init (bwrap's pid 1). */
  readonly initPid: number;
  /** Inode of the sandbox's PID namespace (`pid:[INODE]`). */
  readonly pidNamespace: number;
}

/** Parses `{"child-pid": N, ..., "pid-namespace": INODE, ...}`; null when incomplete. */
export function parseSandboxInfo(text: string): SandboxInfo | null {
  try {
    const info = JSON.parse(text) as Record<string, unknown>;
    const initPid = info["child-pid"];
    const pidNamespace = info["pid-namespace"];
    if (typeof initPid !== "number" || typeof pidNamespace !== "number") return null;
    if (!Number.isSafeInteger(initPid) || initPid <= 1 || !Number.isSafeInteger(pidNamespace)) return null;
    return { initPid, pidNamespace };
  } catch {
    return null;
  }
}

/** Host pids (not zombies) whose PID namespace is `inode`. */
export function processesInPidNamespace(inode: number): number[] {
  const link = `pid:[${inode}]`;
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isSafeInteger(pid) || pid <= 0) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/pid`) === link && !isZombie(pid)) found.push(pid);
    } catch {
      // gone while we looked, or not ours to inspect (then not in our sandbox either)
    }
  }
  return found;
}

/** True when the process is a zombie (dead, waiting to be reaped) or already gone. */
export function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state === "Z" || state === "X";
  } catch {
    return true;
  }
}

function sigkill(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // ESRCH: already gone
  }
}

export interface TeardownReport {
  /** Whether init was still alive when the run ended (then we killed the namespace). */
  readonly initWasAlive: boolean;
  /** Processes still in the namespace when we gave up (empty unless the kernel is stuck). */
  readonly survivors: readonly number[];
}

/** Polls of init's state start this fast (init usually dies within a millisecond or two)... */
const FIRST_POLL_MS = 1;
/** ...and slow down to this. */
const POLL_MS = 10;
/** While init lingers, every process of the namespace is also SIGKILLed directly this often. */
const SCAN_EVERY_MS = 50;

/**
 * SIGKILLs every process of the sandbox's PID namespace and waits (up to `timeoutMs`) until none
 * is left. Safe to call when the sandbox has already ended.
 */
export async function killPidNamespace(info: SandboxInfo, timeoutMs = 10_000): Promise<TeardownReport> {
  let held: number;
  try {
    held = openSync(`/proc/${info.initPid}/ns/pid`, "r");
  } catch {
    return { initWasAlive: false, survivors: [] }; // init was reaped: its namespace is empty
  }
  try {
    // A different namespace: init was reaped and its pid reused, so our namespace is empty too.
    if (fstatSync(held).ino !== info.pidNamespace) return { initWasAlive: false, survivors: [] };
    const link = `pid:[${info.pidNamespace}]`;
    // Init's exit completes (it becomes a zombie) only once every other process of its namespace
    // is gone, so "init is a zombie or gone" means "the namespace is empty".
    const initGone = () => {
      try {
        return readlinkSync(`/proc/${info.initPid}/ns/pid`) !== link || isZombie(info.initPid);
      } catch {
        return true;
      }
    };
    if (initGone()) return { initWasAlive: false, survivors: [] };
    sigkill(info.initPid); // the kernel then kills every other member
    const started = Date.now();
    let lastScan = started;
    let wait = FIRST_POLL_MS;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(POLL_MS, wait * 2);
      if (initGone()) return { initWasAlive: true, survivors: [] };
      const now = Date.now();
      if (now - started >= timeoutMs) {
        return { initWasAlive: true, survivors: processesInPidNamespace(info.pidNamespace) };
      }
      if (now - lastScan >= SCAN_EVERY_MS) {
        lastScan = now;
        for (const pid of processesInPidNamespace(info.pidNamespace)) sigkill(pid);
      }
    }
  } finally {
    closeSync(held);
  }
}
