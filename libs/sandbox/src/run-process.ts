/**
 * Spawns one process tree and watches it: wall-clock deadline, output caps, and a process-group
 * SIGKILL both at the deadline and after the main process exits (so nothing it left in its group
 * outlives the run), then the caller's `afterExit` (the sandbox's teardown) before the outcome is
 * resolved. Knows nothing about bubblewrap; `sandbox.ts` builds the command.
 *
 * Written by hand rather than with execa & co. because the details that matter here are exactly
 * the ones libraries hide: extra input pipes on fds 3.., killing the *group*, and not waiting for
 * pipes a leaked grandchild may hold open forever.
 */
import { spawn } from "node:child_process";
import { openSync, readdirSync, readFileSync } from "node:fs";
import type { Duplex } from "node:stream";
import type { KillReason } from "./status.ts";

export interface ProcessPlan {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly stdin: string;
  /** Written to the child's fds 3, 4, ... and closed (bubblewrap's `--file FD DEST` reads them). */
  readonly fdInputs: readonly Buffer[];
  readonly wallMs: number;
  readonly outputBytes: number;
  /**
   * Open a two-way channel on the child's fd 3 (a socket pair; the input pipes then start at fd 4).
   * Unlike stdin/stdout it stays open for the whole run, so a caller can hold a conversation.
   */
  readonly channel?: boolean;
  /**
   * Open one more pipe, after the input pipes, that the child writes to (bwrap's `--info-fd`); what
   * arrives on it, read to its end, is handed to `afterExit`.
   */
  readonly report?: boolean;
  /**
   * Runs once the main process has exited and its process group was killed, before the outcome is
   * resolved: the sandbox ends every process of the run there (see `teardown.ts`). If it throws,
   * the outcome rejects with its error.
   */
  readonly afterExit?: (report: string) => Promise<void>;
}

/** A started process: its outcome, and (with `channel`) the parent's end of fd 3. */
export interface StartedProcess {
  readonly outcome: Promise<ProcessOutcome>;
  /** The parent's end of the child's fd 3; null without `channel`. */
  readonly channel: Duplex | null;
  /** SIGKILLs the whole process group now (reported as killed by a signal, not as a timeout). */
  kill(): void;
}

export interface ProcessOutcome {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly truncated: boolean;
  readonly killedFor: KillReason;
  readonly wallMs: number;
}

/** How long to keep reading pipes after the main process exited (a leaked child may hold them). */
const PIPE_DRAIN_GRACE_MS = 200;
/** How long to wait for the end of the report pipe after the main process exited. */
const REPORT_GRACE_MS = 2_000;

/** Collects at most `cap` bytes; reports when more arrived. */
class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  overflowed = false;
  constructor(private readonly cap: number) {}
  push(chunk: Buffer): boolean {
    const room = this.cap - this.size;
    if (chunk.length > room) {
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.size = this.cap;
      this.overflowed = true;
      return false;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    return true;
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/** O_CLOEXEC as printed (octal) in /proc/self/fdinfo/N `flags:`. */
const O_CLOEXEC = 0o2000000;

/**
 * Descriptors this process inherited without close-on-exec (a CI runner's pipe, a terminal...).
 * A spawned child inherits them, and neither setpriv, bwrap nor prlimit closes them, so the
 * sandboxed program could write to them. `startProcess` maps each of their numbers to /dev/null in
 * the child (stdio `ignore`). Descriptors Node opens itself are close-on-exec and never leak.
 */
export function leakableFds(): number[] {
  if (process.platform !== "linux") return [];
  const leaks: number[] = [];
  for (const entry of readdirSync("/proc/self/fd")) {
    const fd = Number(entry);
    if (fd <= 2) continue;
    try {
      const flags = /^flags:\s+([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"));
      if (flags !== null && (Number.parseInt(flags[1]!, 8) & O_CLOEXEC) === 0) leaks.push(fd);
    } catch {
      // the descriptor of the directory listing itself, already closed
    }
  }
  return leaks;
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL"); // detached: the child leads its own process group
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** /dev/null, opened once, put in place of every leakable descriptor in the children. */
let devNull: number | undefined;

/**
 * stdin/stdout/stderr and the input pipes as pipes; every leakable descriptor above them replaced
 * by /dev/null (libuv's `ignore` leaves descriptors >= 3 untouched, so it would not help). The
 * others stay `ignore`: they are close-on-exec and vanish at exec.
 */
function childStdio(inputs: number): ("pipe" | "ignore" | number)[] {
  // `inputs` counts the channel too: it is a "pipe" (a socket pair) like the input pipes.
  const stdio: ("pipe" | "ignore" | number)[] = Array.from({ length: 3 + inputs }, () => "pipe");
  const leaks = leakableFds().filter((fd) => fd >= stdio.length);
  if (leaks.length === 0) return stdio;
  devNull ??= openSync("/dev/null", "r+");
  const highest = Math.max(...leaks);
  while (stdio.length <= highest) stdio.push("ignore");
  for (const fd of leaks) stdio[fd] = devNull;
  return stdio;
}

/** Collects everything that arrives on `stream`; `ended` settles at its end (or error). */
function collect(stream: Duplex | null): { readonly ended: Promise<void>; text(): string } {
  const chunks: Buffer[] = [];
  if (stream === null) return { ended: Promise.resolve(), text: () => "" };
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.on("error", () => {});
  const ended = new Promise<void>((resolve) => {
    stream.on("end", resolve);
    stream.on("close", resolve);
  });
  return { ended, text: () => Buffer.concat(chunks).toString("utf8") };
}

/** What has arrived once `report` ended, or after REPORT_GRACE_MS if a writer keeps it open. */
async function reportAfterExit(report: ReturnType<typeof collect>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    report.ended,
    new Promise((resolve) => (timer = setTimeout(resolve, REPORT_GRACE_MS))),
  ]);
  clearTimeout(timer);
  return report.text();
}

export function startProcess(plan: ProcessPlan): StartedProcess {
  const firstInput = plan.channel === true ? 4 : 3;
  const reportFd = firstInput + plan.fdInputs.length;
  const started = performance.now();
  const child = spawn(plan.command, [...plan.args], {
    cwd: plan.cwd,
    env: { ...plan.env },
    detached: true, // own process group, so one kill(-pgid) reaches everything in it
    stdio: childStdio(reportFd - 3 + (plan.report === true ? 1 : 0)),
  });
  const channel = plan.channel === true ? (child.stdio[3] as Duplex) : null;
  // A peer that vanishes mid-write (EPIPE, ECONNRESET) is not an error of ours: the outcome says how it ended.
  channel?.on("error", () => {});
  const reportStream = plan.report === true ? (child.stdio[reportFd] as Duplex | null) : null;
  const report = plan.report === true ? collect(reportStream) : null;
  const outcome = new Promise<ProcessOutcome>((resolve, reject) => {
    const stdout = new CappedBuffer(plan.outputBytes);
    const stderr = new CappedBuffer(plan.outputBytes);
    // stdio[1] and [2] are always "pipe" (see childStdio), so these streams exist.
    const childStdout = child.stdout!;
    const childStderr = child.stderr!;
    let killedFor: KillReason = null;
    let exit: { code: number | null; signal: string | null } | null = null;
    let finished = false;
    let tornDown = plan.afterExit === undefined;
    let closed = false;
    let drainTimer: NodeJS.Timeout | undefined;

    const kill = (reason: Exclude<KillReason, null>) => {
      if (killedFor === null && exit === null) killedFor = reason;
      killGroup(child.pid);
    };
    const deadline = setTimeout(() => kill("timeout"), plan.wallMs);

    /** Stops the timers and drops our ends of the pipes. */
    const release = () => {
      finished = true;
      clearTimeout(deadline);
      clearTimeout(drainTimer);
      childStdout.destroy();
      childStderr.destroy();
      channel?.destroy();
      reportStream?.destroy();
    };
    const finish = () => {
      if (finished || exit === null || !tornDown) return;
      release();
      resolve({
        exitCode: exit.code,
        signal: exit.signal,
        stdout: stdout.bytes(),
        stderr: stderr.bytes(),
        truncated: stdout.overflowed || stderr.overflowed,
        killedFor,
        wallMs: performance.now() - started,
      });
    };

    childStdout.on("data", (chunk: Buffer) => {
      if (!stdout.push(chunk)) kill("output");
    });
    childStderr.on("data", (chunk: Buffer) => {
      if (!stderr.push(chunk)) kill("output");
    });
    child.on("error", (error) => {
      killGroup(child.pid);
      if (!finished) {
        release();
        reject(new Error(`sandbox: could not start ${plan.command}: ${error.message}`));
      }
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      // Whatever the main process left behind in its group dies with it.
      killGroup(child.pid);
      const drain = () => {
        tornDown = true;
        if (closed) finish();
        else drainTimer = setTimeout(finish, PIPE_DRAIN_GRACE_MS);
      };
      if (plan.afterExit === undefined) {
        drain();
        return;
      }
      const afterExit = plan.afterExit;
      void (report === null ? Promise.resolve("") : reportAfterExit(report))
        .then((text) => afterExit(text))
        .then(drain, (error: unknown) => {
          if (finished) return;
          release();
          reject(error instanceof Error ? error : new Error(String(error)));
        });
    });
    child.on("close", () => {
      closed = true;
      finish();
    });

    // Inputs: a program that never reads stdin makes these writes fail with EPIPE; that is fine.
    const feed = (stream: NodeJS.WritableStream | null | undefined, data: string | Buffer) => {
      if (!stream) return;
      stream.on("error", () => {});
      stream.end(data);
    };
    feed(child.stdin, plan.stdin);
    plan.fdInputs.forEach((data, i) => {
      feed(child.stdio[firstInput + i] as NodeJS.WritableStream | null, data);
    });
  });
  return { outcome, channel, kill: () => killGroup(child.pid) };
}
