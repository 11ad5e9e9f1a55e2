/**
 * The sandbox contract. Environments (coding, math, tool agents) depend only on these types;
 * `libs/sandbox` implements them with bubblewrap + rlimits.
 */

/** Resource limits for one run. Every field has a default (see `defaultLimits`). */
export interface SandboxLimits {
  /** CPU seconds (RLIMIT_CPU). */
  readonly cpuSeconds: number;
  /** Wall-clock limit in milliseconds; the whole process group is killed past it. */
  readonly wallMs: number;
  /** Address space in bytes (RLIMIT_AS). */
  readonly memoryBytes: number;
  /** Processes/threads the run may have at once (RLIMIT_NPROC, inside its own user namespace). */
  readonly processes: number;
  /** Largest file the run may write, in bytes (RLIMIT_FSIZE); also bounds the private temp dir. */
  readonly fileBytes: number;
  /** Open file descriptors (RLIMIT_NOFILE). */
  readonly openFiles: number;
  /** Bytes of stdout and of stderr kept; the rest is dropped and `truncated` is set. */
  readonly outputBytes: number;
}

export interface RunRequest {
  /** `python`: run `code` with python3. `command`: run `argv` directly (no shell). */
  readonly language: "python" | "command";
  readonly code?: string;
  readonly argv?: readonly string[];
  readonly stdin?: string;
  /** Extra files written into the private working directory before the run (relative paths). */
  readonly files?: Readonly<Record<string, string>>;
  readonly limits?: Partial<SandboxLimits>;
}

/**
 * How a run ended:
 * - `ok`: exited with status 0;
 * - `error`: exited non-zero (an exception, a failed assert);
 * - `timeout`: killed at the wall-clock limit; `cpu-limit`: killed by RLIMIT_CPU;
 * - `memory-limit`: failed to allocate under RLIMIT_AS (MemoryError or killed);
 * - `output-limit`: produced more output than allowed (the run is killed);
 * - `killed`: ended by another signal.
 */
export type RunStatus = "ok" | "error" | "timeout" | "cpu-limit" | "memory-limit" | "output-limit" | "killed";

export interface RunResult {
  readonly status: RunStatus;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly truncated: boolean;
  readonly wallMs: number;
  /** Which isolation ran it: `bubblewrap`, or `unsafe-rlimits` when explicitly allowed without it. */
  readonly isolation: "bubblewrap" | "unsafe-rlimits";
}

/** Anything that can run untrusted code. Environments take one of these, never a child_process. */
export interface CodeRunner {
  run(request: RunRequest): Promise<RunResult>;
}
