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
  /** RLIMIT_AS. CPython needs ~30 MiB to start; 512 MiB leaves room for real work. */
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
