/**
 * Default limits and the zod schemas that validate a `RunRequest` at the sandbox boundary.
 *
 * The defaults suit one model-written solution to a programming puzzle: a few seconds of CPU,
 * half a gigabyte of address space, a handful of processes. Environments override per run.
 */
import { z } from "zod";
import type { RunRequest, SandboxLimits } from "./types.ts";

const MiB = 1024 * 1024;

export const defaultLimits: SandboxLimits = Object.freeze({
  /** RLIMIT_CPU soft limit (SIGXCPU); the hard limit, one second later, is SIGKILL. */
  cpuSeconds: 10,
  /** Wall clock: the whole sandbox is SIGKILLed past it (sleeping programs use no CPU). */
  wallMs: 15_000,
  /**
   * Memory of the whole run: every process together, its tmpfs and shared memory (a cgroup), or
   * divided between its processes where no cgroup can be used (`perProcessShare`). Each process
   * also has it as RLIMIT_AS. CPython starts in 16 MiB of address space; 512 MiB leaves room.
   */
  memoryBytes: 512 * MiB,
  /** RLIMIT_NPROC for the run's own processes and threads (the sandbox's init is not counted). */
  processes: 32,
  /** RLIMIT_FSIZE, and the size of the private tmpfs (on top of the request's input files). */
  fileBytes: 16 * MiB,
  /** RLIMIT_NOFILE. */
  openFiles: 64,
  /** Bytes of stdout and of stderr kept; one more byte kills the run (`output-limit`). */
  outputBytes: 1 * MiB,
});

const positiveInt = (what: string) =>
  z
    .number({ error: `${what} must be a number` })
    .int(`${what} must be an integer`)
    .positive(`${what} must be positive`);

export const SandboxLimitsSchema = z.object({
  cpuSeconds: positiveInt("limits.cpuSeconds"),
  wallMs: positiveInt("limits.wallMs"),
  memoryBytes: positiveInt("limits.memoryBytes"),
  processes: positiveInt("limits.processes"),
  fileBytes: positiveInt("limits.fileBytes"),
  openFiles: positiveInt("limits.openFiles").min(4, "limits.openFiles must be at least 4 (stdio + one)"),
  outputBytes: positiveInt("limits.outputBytes"),
});

/**
 * The address space each process gets where no cgroup bounds the run as a whole: at least this
 * much, so that a program that forks or starts threads still has room to work.
 */
export const MIN_PROCESS_SHARE_BYTES = 96 * MiB;
/** Less than this left for processes (after the tmpfs) is refused: CPython needs 16 MiB to start. */
const MIN_PROCESS_BUDGET_BYTES = 16 * MiB;

/**
 * Without a cgroup, RLIMIT_AS and RLIMIT_NPROC are the only bounds, and both are per process: with
 * the defaults a run could hold 32 × 512 MiB. So the budget is divided instead: what the tmpfs
 * (`fixedBytes`: /work and /dev/shm) leaves is shared by at most `floor(left / 96 MiB)` processes
 * and threads, each with an equal share as its address space, and their sum cannot exceed
 * `memoryBytes`. The cost: with the defaults 4 processes/threads of 120 MiB instead of 32 of 512 MiB
 * (address space, which counts shared libraries and thread stacks in full, so it overstates RSS).
 */
export function perProcessShare(limits: SandboxLimits, fixedBytes: number): SandboxLimits {
  const budget = limits.memoryBytes - fixedBytes;
  if (budget < MIN_PROCESS_BUDGET_BYTES)
    throw new Error(
      `sandbox: limits.memoryBytes (${limits.memoryBytes} bytes) leaves ${budget} bytes for processes after ` +
        `the run's tmpfs (${fixedBytes} bytes); without a cgroup the run needs at least ${MIN_PROCESS_BUDGET_BYTES} ` +
        "(raise memoryBytes or lower fileBytes)",
    );
  const processes = Math.max(1, Math.min(limits.processes, Math.floor(budget / MIN_PROCESS_SHARE_BYTES)));
  return { ...limits, processes, memoryBytes: Math.floor(budget / processes) };
}

/**
 * A file name inside the private working directory: relative, no `..`, no empty segments.
 * Checked here because these names become bubblewrap destinations and host paths (unsafe mode).
 */
export function checkRelativePath(path: string): string | null {
  if (path.length === 0) return "is empty";
  if (path.startsWith("/")) return "is absolute (file names must be relative to the working directory)";
  if (path.includes("\0")) return "contains a NUL byte";
  const segments = path.split("/");
  if (segments.some((s) => s === "" || s === "." || s === "..")) return "has an empty, '.' or '..' segment";
  return null;
}

/** The name the python program is written to, in the working directory. */
export const PROGRAM_FILE = "main.py";

export const RunRequestSchema = z
  .object({
    language: z.enum(["python", "command"], { error: "language must be 'python' or 'command'" }),
    code: z.string().optional(),
    argv: z.array(z.string()).readonly().optional(),
    stdin: z.string().optional(),
    files: z.record(z.string(), z.string()).optional(),
    limits: SandboxLimitsSchema.partial().optional(),
  })
  .superRefine((request, ctx) => {
    if (request.language === "python" && request.code === undefined)
      ctx.addIssue({ code: "custom", path: ["code"], message: "language 'python' needs `code`" });
    if (request.language === "command" && (request.argv === undefined || request.argv.length === 0))
      ctx.addIssue({
        code: "custom",
        path: ["argv"],
        message: "language 'command' needs a non-empty `argv`",
      });
    for (const name of Object.keys(request.files ?? {})) {
      const problem = checkRelativePath(name);
      if (problem !== null)
        ctx.addIssue({ code: "custom", path: ["files", name], message: `file name ${problem}` });
      if (request.language === "python" && name === PROGRAM_FILE)
        ctx.addIssue({
          code: "custom",
          path: ["files", name],
          message: `'${PROGRAM_FILE}' is where the python code is written; pick another name`,
        });
    }
  });

/** Validates a request (throws a zod error naming the bad field) and fills in the limits. */
export function resolveRequest(
  request: RunRequest,
  base: SandboxLimits = defaultLimits,
): RunRequest & { readonly limits: SandboxLimits } {
  const parsed = RunRequestSchema.parse(request);
  return { ...request, limits: { ...base, ...parsed.limits } };
}
