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
import { findPython, type PythonInstall, which } from "./host.ts";
import { defaultLimits, PROGRAM_FILE, resolveRequest, SandboxLimitsSchema } from "./limits.ts";
import { type ProcessOutcome, runProcess } from "./run-process.ts";
import { classifyRun, decodeShellStyleExit } from "./status.ts";
import type { CodeRunner, RunRequest, RunResult, SandboxLimits } from "./types.ts";
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

type Backend =
  | { readonly kind: "bubblewrap"; readonly tools: BubblewrapTools }
  | { readonly kind: "unsafe-rlimits"; readonly reason: string };

export class Sandbox implements CodeRunner {
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

  private async runNow(request: RunRequest & { readonly limits: SandboxLimits }): Promise<RunResult> {
    const files: [string, Buffer][] = Object.entries(request.files ?? {}).map(([n, c]) => [
      n,
      Buffer.from(c),
    ]);
    if (request.language === "python") files.unshift([PROGRAM_FILE, Buffer.from(request.code!)]);
    const argv =
      request.language === "python" ? [this.python.executable, "-B", "-u", PROGRAM_FILE] : [...request.argv!];
    const outcome =
      this.backend.kind === "bubblewrap"
        ? await this.runBubblewrap(this.backend.tools, request, files, argv)
        : await this.runUnsafe(request, files, argv);
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

  private runBubblewrap(
    tools: BubblewrapTools,
    request: RunRequest & { readonly limits: SandboxLimits },
    files: readonly [string, Buffer][],
    argv: readonly string[],
  ): Promise<ProcessOutcome> {
    const inputBytes = files.reduce((sum, [, content]) => sum + content.length + PAGE_BYTES, 0);
    const [command, ...args] = bubblewrapCommand({
      tools,
      limits: request.limits,
      tmpfsBytes: request.limits.fileBytes + inputBytes,
      files: files.map(([name]) => name),
      env: programEnv(SANDBOX_WORKDIR),
      argv,
    });
    return runProcess({
      command: command!,
      args,
      env: { PATH: "/usr/bin:/bin" },
      stdin: request.stdin ?? "",
      fdInputs: files.map(([, content]) => content),
      wallMs: request.limits.wallMs,
      outputBytes: request.limits.outputBytes,
    });
  }

  private async runUnsafe(
    request: RunRequest & { readonly limits: SandboxLimits },
    files: readonly [string, Buffer][],
    argv: readonly string[],
  ): Promise<ProcessOutcome> {
    const dir = await mkdtemp(join(tmpdir(), "troupe-sandbox-"));
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
        ...launcherArgs(this.python.executable, request.limits),
        ...argv,
      ];
      return await runProcess({
        command: command!,
        args,
        cwd: dir,
        env: programEnv(dir),
        stdin: request.stdin ?? "",
        fdInputs: [],
        wallMs: request.limits.wallMs,
        outputBytes: request.limits.outputBytes,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

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

/** Creates a sandbox, after checking that bubblewrap really runs a program here. */
export async function createSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const parsed = SandboxOptionsSchema.parse(options);
  const limits = { ...defaultLimits, ...parsed.limits };
  const concurrency = parsed.concurrency ?? availableParallelism();
  const python = findPython(parsed.python);
  const tools = findBubblewrapTools(python, parsed.rootDropsTo, parsed.bwrap);
  let reason: string;
  if (typeof tools === "string") {
    reason = tools;
  } else {
    const candidate = new Sandbox({ kind: "bubblewrap", tools }, python, limits, concurrency);
    const probe = await candidate.run({
      language: "python",
      code: "print('sandbox-ok')",
      limits: { wallMs: 10_000, cpuSeconds: 5 },
    });
    if (probe.status === "ok" && probe.stdout.trim() === "sandbox-ok") return candidate;
    const detail = (probe.stderr.trim() || probe.stdout.trim()).split("\n").slice(-3).join(" | ");
    reason = `a test run failed (${probe.status}, exit ${probe.exitCode ?? probe.signal}): ${detail}`;
    if (python.prefix !== null && tools.dropTo !== null)
      reason += ` (as root the sandbox runs as uid ${tools.dropTo.uid}, which must be able to read ${python.prefix}; install the distribution's python3 at /usr/bin/python3 or pass \`python\`)`;
  }
  if (!parsed.unsafe) throw new SandboxUnavailableError(reason);
  return new Sandbox({ kind: "unsafe-rlimits", reason }, python, limits, concurrency);
}
