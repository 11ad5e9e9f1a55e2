/**
 * `Sandbox`: a `CodeRunner` that runs each request in a fresh bubblewrap sandbox (see
 * `bubblewrap.ts` for the layers), at most `concurrency` at once; the rest wait in a queue.
 *
 * `createSandbox` probes the real thing (a python hello-world through the exact command line
 * every run uses) and refuses, with the reason and the fix, when bubblewrap cannot run — unless
 * the caller passes `unsafe: true`, which falls back to rlimits only (see `unsafe.ts`).
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pLimit, { type LimitFunction } from "p-limit";
import { z } from "zod";
import { type BubblewrapTools, bubblewrapCommand, SANDBOX_WORKDIR } from "./bubblewrap.ts";
import {
  cgroupParentProblem,
  describeCgroupParent,
  findRunCgroupParent,
  RunCgroup,
  type RunCgroupParent,
} from "./cgroup.ts";
import { findPython, type PythonInstall, which } from "./host.ts";
import {
  defaultLimits,
  PROGRAM_FILE,
  perProcessShare,
  resolveRequest,
  SandboxLimitsSchema,
} from "./limits.ts";
import { type ProcessOutcome, type StartedProcess, startProcess } from "./run-process.ts";
import { seccompFilter } from "./seccomp.ts";
import { classifyRun, decodeShellStyleExit } from "./status.ts";
import { killPidNamespace, parseSandboxInfo } from "./teardown.ts";
import type { ConnectedRunner, LiveRun, RunRequest, RunResult, SandboxLimits } from "./types.ts";
import { launcherArgs } from "./unsafe.ts";

export const SandboxOptionsSchema = z.object({
  /** Fall back to rlimits only when bubblewrap cannot run. NOT a security boundary. */
  unsafe: z.boolean().default(false),
  /** Runs at once; more are queued. Default: the CPUs this process may use. */
  concurrency: z.number().int().positive("concurrency must be a positive integer").optional(),
  /** Defaults for every run's limits (each request may still override). */
  limits: SandboxLimitsSchema.partial().default({}),
  /** The python3 to use. Default /usr/bin/python3, else `python3` on PATH. */
  python: z.string().optional(),
  /** Path of bwrap. Default: `bwrap` on PATH. */
  bwrap: z.string().optional(),
  /** Host uid/gid to drop to before bwrap when running as root. Default 65534 (nobody). */
  rootDropsTo: z.object({ uid: z.number().int(), gid: z.number().int() }).default({ uid: 65534, gid: 65534 }),
  /**
   * Where each run gets its own cgroup (one memory budget for all its processes; README, "Memory
   * of a run"). Default `$TROUPE_SANDBOX_CGROUP`, else found: this process's own cgroup v2 when
   * delegated, else its cgroup v1 `memory` (+ `pids`); where neither can be used, the budget is
   * divided between processes. A directory: a delegated cgroup v2 directory (`memory` and `pids`
   * in its `cgroup.subtree_control`, writable), refused when unusable. `false` (or the variable set
   * to `off`): no cgroup, the budget divided between processes.
   */
  cgroup: z.union([z.string().min(1, "cgroup must be a directory or false"), z.literal(false)]).optional(),
});
export type SandboxOptions = z.input<typeof SandboxOptionsSchema>;

/** Thrown by `createSandbox` when bubblewrap cannot run here and `unsafe` was not given. */
export class SandboxUnavailableError extends Error {
  override readonly name = "SandboxUnavailableError";
  constructor(readonly reason: string) {
    super(
      `sandbox: bubblewrap cannot run here: ${reason}\n` +
        "Fix: install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`, or `bash tools/system-deps.sh`; " +
        "Fedora: `dnf install bubblewrap`) on Linux with unprivileged user namespaces enabled " +
        "(`sysctl user.max_user_namespaces` > 0; Ubuntu 24.04+: `sysctl kernel.apparmor_restrict_unprivileged_userns=0`; " +
        "Docker: `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`). " +
        "Or pass `{ unsafe: true }` to run with rlimits only, which does NOT contain hostile code.",
    );
  }
}

/** Minimal environment of the program: nothing from ours leaks in. */
function programEnv(home: string): Record<string, string> {
  return { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: home, TMPDIR: home, LANG: "C.UTF-8" };
}

/** Page slack per input file in the tmpfs (tmpfs rounds every file up to whole pages). */
const PAGE_BYTES = 4096;

/**
 * The seccomp filter (BPF) and the PID-namespace teardown after every run. Both always on, except
 * through `InternalSandboxOptions`, which exist to measure what they cost and to test each alone.
 */
interface Hardening {
  /** null: no filter. */
  readonly seccomp: Buffer | null;
  readonly teardown: boolean;
}

type Backend =
  | {
      readonly kind: "bubblewrap";
      readonly tools: BubblewrapTools;
      readonly hardening: Hardening;
      /** Where the runs' cgroups are made (`cgroup.ts`); null: the budget divided between processes. */
      readonly cgroupParent: RunCgroupParent | null;
    }
  | { readonly kind: "unsafe-rlimits"; readonly reason: string };

export class Sandbox implements ConnectedRunner {
  private readonly pool: LimitFunction;
  readonly isolation: RunResult["isolation"];

  constructor(
    private readonly backend: Backend,
    private readonly python: PythonInstall,
    readonly limits: SandboxLimits,
    readonly concurrency: number,
  ) {
    this.pool = pLimit(concurrency);
    this.isolation = backend.kind;
  }

  /** What bounds the memory of a run as a whole: `cgroup v1 (…)`, `cgroup v2 (…)` or the division. */
  get memoryBound(): string {
    return this.backend.kind === "bubblewrap" && this.backend.cgroupParent !== null
      ? describeCgroupParent(this.backend.cgroupParent)
      : "per-process share (RLIMIT_AS × RLIMIT_NPROC ≤ memoryBytes)";
  }

  /** Why bubblewrap was not used (only for `unsafe-rlimits` sandboxes). */
  get unsafeBecause(): string | null {
    return this.backend.kind === "unsafe-rlimits" ? this.backend.reason : null;
  }

  /** Runs waiting for a free slot. */
  get queued(): number {
    return this.pool.pendingCount;
  }

  async run(request: RunRequest): Promise<RunResult> {
    const resolved = resolveRequest(request, this.limits); // validate now, not when dequeued
    return await this.pool(() => this.runNow(resolved));
  }

  async runConnected<T>(
    requests: readonly RunRequest[],
    talk: (runs: readonly LiveRun[]) => Promise<T>,
  ): Promise<{ readonly value: T; readonly results: readonly RunResult[] }> {
    const resolved = requests.map((r) => resolveRequest(r, this.limits));
    return await this.pool(async () => {
      const started = await Promise.all(resolved.map((r) => this.start(r, true)));
      const runs = started.map(liveRun);
      try {
        const value = await talk(runs);
        return { value, results: await Promise.all(runs.map(finishConnected)) };
      } finally {
        for (const run of runs) run.kill(); // no-op for runs that have ended
        await Promise.allSettled(runs.map((r) => r.done));
      }
    });
  }

  private async runNow(request: ResolvedRequest): Promise<RunResult> {
    return await (await this.start(request, false)).result;
  }

  /** Starts one run; with `channel`, fd 3 of the program is a socket whose other end we hold. */
  private async start(request: ResolvedRequest, channel: boolean): Promise<Started> {
    const files: [string, Buffer][] = Object.entries(request.files ?? {}).map(([n, c]) => [
      n,
      Buffer.from(c),
    ]);
    if (request.language === "python") files.unshift([PROGRAM_FILE, Buffer.from(request.code!)]);
    const argv =
      request.language === "python" ? [this.python.executable, "-B", "-u", PROGRAM_FILE] : [...request.argv!];
    const after: AfterRun = { oomKilled: false };
    const { process, cleanup } =
      this.backend.kind === "bubblewrap"
        ? { process: this.startBubblewrap(this.backend, request, files, argv, channel, after), cleanup: null }
        : await this.startUnsafe(request, files, argv, channel);
    const result = process.outcome
      .then((outcome) => this.toResult(request, outcome, after))
      .finally(() => cleanup?.());
    return { process, result };
  }

  private toResult(request: ResolvedRequest, outcome: ProcessOutcome, after: AfterRun): RunResult {
    const { exitCode, signal } = decodeShellStyleExit(outcome.exitCode, outcome.signal);
    const stderr = outcome.stderr.toString("utf8");
    const status = classifyRun({
      exitCode,
      signal,
      killedFor: outcome.killedFor,
      stderr,
      wallMs: outcome.wallMs,
      limits: request.limits,
      cores: availableParallelism(),
      oomKilled: after.oomKilled,
    });
    return {
      status,
      exitCode,
      signal,
      stdout: outcome.stdout.toString("utf8"),
      stderr,
      truncated: outcome.truncated,
      wallMs: Math.round(outcome.wallMs),
      isolation: this.isolation,
    };
  }

  private startBubblewrap(
    backend: Extract<Backend, { kind: "bubblewrap" }>,
    request: ResolvedRequest,
    files: readonly [string, Buffer][],
    argv: readonly string[],
    channel: boolean,
    after: AfterRun,
  ): StartedProcess {
    const { tools, hardening } = backend;
    const inputBytes = files.reduce((sum, [, content]) => sum + content.length + PAGE_BYTES, 0);
    // fds of the child: [3: channel], the input files, [the seccomp program], [bwrap's report].
    const firstFileFd = channel ? 4 : 3;
    const fdInputs = files.map(([, content]) => content);
    if (hardening.seccomp !== null) fdInputs.push(hardening.seccomp);
    const seccompFd = hardening.seccomp === null ? null : firstFileFd + files.length;
    const infoFd = hardening.teardown ? firstFileFd + fdInputs.length : null;
    const tmpfsBytes = request.limits.fileBytes + inputBytes;
    const shmBytes = request.limits.fileBytes;
    // One memory budget for the whole run. With a cgroup: every process, both tmpfs and the page
    // cache together under memoryBytes (+3 tasks: timeout, bwrap's monitor and bwrap's init).
    // Without: each process gets its share of what the tmpfs leave (`perProcessShare`).
    const cgroup =
      backend.cgroupParent === null
        ? null
        : RunCgroup.create(backend.cgroupParent, {
            memoryBytes: request.limits.memoryBytes,
            tasks: request.limits.processes + 3,
          });
    const [command, ...args] = bubblewrapCommand({
      tools,
      limits: cgroup === null ? perProcessShare(request.limits, tmpfsBytes + shmBytes) : request.limits,
      tmpfsBytes,
      shmBytes,
      files: files.map(([name]) => name),
      firstFileFd,
      seccompFd,
      infoFd,
      cgroupProcs: cgroup?.procsFiles ?? [],
      env: programEnv(SANDBOX_WORKDIR),
      argv,
    });
    const started = startProcess({
      command: command!,
      args,
      env: { PATH: "/usr/bin:/bin" },
      stdin: request.stdin ?? "",
      fdInputs,
      wallMs: request.limits.wallMs,
      outputBytes: request.limits.outputBytes,
      channel,
      report: hardening.teardown,
      afterExit:
        !hardening.teardown && cgroup === null
          ? undefined
          : async (report) => {
              if (cgroup !== null) {
                const { oomKills, survivors } = await cgroup.destroy();
                after.oomKilled = oomKills > 0;
                if (survivors.length > 0) throw survivorsError(survivors);
              }
              if (hardening.teardown) await endNamespace(report);
            },
    });
    if (cgroup?.watchesOom) {
      // cgroup v1 OOM-kills one process and lets the rest go on; the run ends at the first kill.
      const watch = setInterval(() => {
        if (cgroup.oomKills() > 0) {
          clearInterval(watch);
          cgroup.killAll();
        }
      }, OOM_POLL_MS);
      void started.outcome.finally(() => clearInterval(watch)).catch(() => {});
    }
    return started;
  }

  private async startUnsafe(
    request: ResolvedRequest,
    files: readonly [string, Buffer][],
    argv: readonly string[],
    channel: boolean,
  ): Promise<{ process: StartedProcess; cleanup: () => Promise<void> }> {
    const dir = await mkdtemp(join(tmpdir(), "troupe-sandbox-"));
    const cleanup = () => rm(dir, { recursive: true, force: true });
    try {
      for (const [name, content] of files) {
        await mkdir(dirname(join(dir, name)), { recursive: true });
        await writeFile(join(dir, name), content);
      }
      const timeout = which("timeout");
      const backstop =
        timeout === null ? [] : [timeout, "-s", "KILL", `${Math.ceil(request.limits.wallMs / 1000) + 2}s`];
      const [command, ...args] = [
        ...backstop,
        ...launcherArgs(this.python.executable, perProcessShare(request.limits, 0)),
        ...argv,
      ];
      const process = startProcess({
        command: command!,
        args,
        cwd: dir,
        env: programEnv(dir),
        stdin: request.stdin ?? "",
        fdInputs: [],
        wallMs: request.limits.wallMs,
        outputBytes: request.limits.outputBytes,
        channel,
      });
      return { process, cleanup };
    } catch (error) {
      await cleanup();
      throw error;
    }
  }
}

type ResolvedRequest = RunRequest & { readonly limits: SandboxLimits };

/** What the teardown learnt about a run, for its status. */
interface AfterRun {
  oomKilled: boolean;
}

interface Started {
  readonly process: StartedProcess;
  readonly result: Promise<RunResult>;
}

/** Our end of a started run's channel, as the `LiveRun` that `runConnected` hands out. */
function liveRun({ process, result }: Started): LiveRun & { readonly ended: () => boolean } {
  const channel = process.channel!;
  const early: Buffer[] = [];
  let listener: ((chunk: Buffer) => void) | null = null;
  let ended = false;
  void result.then(() => {
    ended = true;
  });
  channel.on("data", (chunk: Buffer) => (listener === null ? early.push(chunk) : listener(chunk)));
  return {
    send: (data) => {
      if (!ended && channel.writable) channel.write(data);
    },
    onData: (next) => {
      listener = next;
      for (const chunk of early.splice(0)) next(chunk);
    },
    end: () => {
      if (channel.writable) channel.end();
    },
    kill: () => {
      if (!ended) process.kill();
    },
    done: result,
    ended: () => ended,
  };
}

/** Lets a run whose partner is finished end on its own (its channel reads EOF), then kills it. */
async function finishConnected(run: LiveRun): Promise<RunResult> {
  run.end();
  const grace = setTimeout(() => run.kill(), CONNECTED_EXIT_GRACE_MS);
  try {
    return await run.done;
  } finally {
    clearTimeout(grace);
  }
}

/**
 * After every run: whatever is left of the sandbox's PID namespace is SIGKILLed, and the result
 * waits until it is gone (see `teardown.ts`). `report` is bwrap's `--info-fd` JSON; empty when
 * bwrap failed before it created the namespace.
 */
async function endNamespace(report: string): Promise<void> {
  if (report.trim() === "") return;
  const info = parseSandboxInfo(report);
  if (info === null)
    throw new Error(`sandbox: unreadable bubblewrap report ${JSON.stringify(report.slice(0, 200))}`);
  const { survivors } = await killPidNamespace(info);
  if (survivors.length > 0) throw survivorsError(survivors);
}

function survivorsError(survivors: readonly number[]): Error {
  return new Error(
    `sandbox: ${survivors.length} process(es) of a finished run survived SIGKILL for 10 s (host pids ${survivors.join(", ")})`,
  );
}

/** How often a run under cgroup v1 looks for an OOM kill (one small file read). */
const OOM_POLL_MS = 25;

/** How long a connected run may take to exit after its channel closed, before it is killed. */
const CONNECTED_EXIT_GRACE_MS = 300;

/** Why bubblewrap cannot run here, or null when the tools are present (the probe decides the rest). */
function findBubblewrapTools(
  python: PythonInstall,
  dropTo: { uid: number; gid: number },
  explicitBwrap: string | undefined,
): BubblewrapTools | string {
  if (process.platform !== "linux")
    return `it needs Linux namespaces and this is ${process.platform} (run on Linux, e.g. in a VM)`;
  const bwrap =
    explicitBwrap === undefined
      ? (which("bwrap") ?? which("bwrap", "/usr/bin:/usr/local/bin"))
      : explicitBwrap;
  if (bwrap === null) return "`bwrap` is not installed (not on PATH)";
  if (!existsSync(bwrap)) return `\`${bwrap}\` does not exist`;
  const prlimit = which("prlimit", "/usr/bin:/bin");
  if (prlimit === null) return "util-linux's `prlimit` is not in /usr/bin (install util-linux)";
  const isRoot = process.getuid?.() === 0;
  const setpriv = which("setpriv", "/usr/bin:/bin");
  if (isRoot && setpriv === null) return "running as root needs util-linux's `setpriv` to drop to nobody";
  return {
    bwrap,
    prlimit,
    setpriv,
    timeout: which("timeout", "/usr/bin:/bin"),
    dropTo: isRoot ? dropTo : null,
    extraReadOnly: python.prefix === null ? [] : [python.prefix],
  };
}

/** Not for production: only the bench and the tests that show what the hardening closes use it. */
export interface InternalSandboxOptions {
  /**
   * false: no seccomp filter, which reopens the escapes it closes (README, "Seccomp filter").
   * Default true.
   */
  readonly seccomp?: boolean;
  /** false: no PID-namespace teardown after each run (README, "Teardown"). Default true. */
  readonly teardown?: boolean;
}

/**
 * The hardening asked for, or why it cannot be had (then bubblewrap is not used at all). Runs
 * without a cgroup of their own get the filter that also refuses sockets (`NO_CGROUP_RULES`).
 */
async function loadHardening(
  internal: InternalSandboxOptions,
  withCgroup: boolean,
): Promise<Hardening | string> {
  const teardown = internal.teardown ?? true;
  if (internal.seccomp === false) return { seccomp: null, teardown };
  try {
    return { seccomp: (await seccompFilter(withCgroup ? "cgroup" : "no cgroup")).bpf, teardown };
  } catch (error) {
    return (error as Error).message;
  }
}

/** Creates a sandbox, after checking that bubblewrap really runs a program here. */
export async function createSandbox(
  options: SandboxOptions = {},
  internal: InternalSandboxOptions = {},
): Promise<Sandbox> {
  const parsed = SandboxOptionsSchema.parse(options);
  const limits = { ...defaultLimits, ...parsed.limits };
  const concurrency = parsed.concurrency ?? availableParallelism();
  const python = findPython(parsed.python);
  const tools = findBubblewrapTools(python, parsed.rootDropsTo, parsed.bwrap);
  const { cgroupParent, cgroupProblem } = runCgroupParent(
    parsed.cgroup ?? (process.env.TROUPE_SANDBOX_CGROUP || undefined),
  );
  const hardening = typeof tools === "string" ? tools : await loadHardening(internal, cgroupParent !== null);
  let reason: string;
  if (typeof tools === "string") {
    reason = tools;
  } else if (typeof hardening === "string") {
    reason = hardening;
  } else if (cgroupProblem !== null) {
    reason = cgroupProblem;
  } else {
    const candidate = new Sandbox(
      { kind: "bubblewrap", tools, hardening, cgroupParent },
      python,
      limits,
      concurrency,
    );
    const probe = await candidate
      .run({ language: "python", code: "print('sandbox-ok')", limits: { wallMs: 10_000, cpuSeconds: 5 } })
      .catch((error: Error) => error);
    if (!(probe instanceof Error) && probe.status === "ok" && probe.stdout.trim() === "sandbox-ok")
      return candidate;
    if (probe instanceof Error) {
      reason = `a test run failed: ${probe.message}`;
    } else {
      const detail = (probe.stderr.trim() || probe.stdout.trim()).split("\n").slice(-3).join(" | ");
      reason = `a test run failed (${probe.status}, exit ${probe.exitCode ?? probe.signal}): ${detail}`;
    }
    if (python.prefix !== null && tools.dropTo !== null)
      reason += ` (as root the sandbox runs as uid ${tools.dropTo.uid}, which must be able to read ${python.prefix}; install the distribution's python3 at /usr/bin/python3 or pass \`python\`)`;
  }
  if (!parsed.unsafe) throw new SandboxUnavailableError(reason);
  return new Sandbox({ kind: "unsafe-rlimits", reason }, python, limits, concurrency);
}

/**
 * The parent of the runs' cgroups: a named cgroup v2 directory (refused with the reason when it
 * cannot be used), none (`false`, `off`), or the one this process can use, found; where none can
 * be found the runs divide their budget between processes instead.
 */
function runCgroupParent(setting: string | false | undefined): {
  cgroupParent: RunCgroupParent | null;
  cgroupProblem: string | null;
} {
  if (setting === false || setting === "off") return { cgroupParent: null, cgroupProblem: null };
  if (setting !== undefined) {
    const problem = cgroupParentProblem(setting);
    return problem === null
      ? { cgroupParent: { version: 2, dir: setting }, cgroupProblem: null }
      : { cgroupParent: null, cgroupProblem: problem };
  }
  const found = process.platform === "linux" ? findRunCgroupParent() : "not Linux";
  return { cgroupParent: typeof found === "string" ? null : found, cgroupProblem: null };
}
