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

/** One process of a connected run (see `ConnectedRunner`), seen from the caller. */
export interface LiveRun {
  /** Writes to the process's fd 3. Ignored once the process has gone. */
  send(data: string): void;
  /** Receives every chunk the process writes to its fd 3, in order (earlier chunks are replayed). */
  onData(listener: (chunk: Buffer) => void): void;
  /** Closes our end of fd 3: the process reads end-of-file. */
  end(): void;
  /** SIGKILLs the run now; its status reads `killed`. */
  kill(): void;
  /** How the run ended, once it has. */
  readonly done: Promise<RunResult>;
}

/**
 * A runner that can start several runs that talk to each other through us: each gets its own
 * sandbox (nothing shared: no files, no process namespace, no memory) plus a socket on fd 3 whose
 * other end the caller holds. `createSandbox` returns one; `runPythonWithTests` needs one.
 */
export interface ConnectedRunner extends CodeRunner {
  /**
   * Starts every request at once, holding ONE concurrency slot for all of them (they wait on each
   * other, so queueing one behind another could deadlock). `talk` wires them together; the result
   * comes once `talk` has settled and every run has ended (runs still going are killed then).
   */
  runConnected<T>(
    requests: readonly RunRequest[],
    talk: (runs: readonly LiveRun[]) => Promise<T>,
  ): Promise<{ readonly value: T; readonly results: readonly RunResult[] }>;
}

export function isConnectedRunner(runner: CodeRunner): runner is ConnectedRunner {
  return typeof (runner as Partial<ConnectedRunner>).runConnected === "function";
}
