/**
 * Turns how a process ended (exit code, signal, why we killed it, stderr) into a `RunStatus`.
 *
 * Under bubblewrap the program is not our child: bwrap's init reports a program killed by
 * signal N as exit code 128 + N, so codes 129..192 are decoded back into signals. A program that
 * calls `exit(137)` on purpose therefore reads as SIGKILL; it can only mislabel its own run.
 */
import { constants } from "node:os";
import type { RunStatus, SandboxLimits } from "./types.ts";

/** Why the runner itself ended the run, if it did. */
export type KillReason = "timeout" | "output" | null;

export interface Termination {
  readonly exitCode: number | null;
  readonly signal: string | null;
}

const signalNames = new Map<number, string>(
  Object.entries(constants.signals).map(([name, number]) => [number, name]),
);

/** bwrap's `128 + N` convention back to `{ exitCode: null, signal: "SIGN" }`. */
export function decodeShellStyleExit(exitCode: number | null, signal: string | null): Termination {
  if (signal !== null || exitCode === null || exitCode <= 128) return { exitCode, signal };
  const name = signalNames.get(exitCode - 128);
  return name === undefined ? { exitCode, signal } : { exitCode: null, signal: name };
}

/**
 * Messages a process prints when an allocation fails under RLIMIT_AS: CPython's MemoryError,
 * C's strerror(ENOMEM), C++'s std::bad_alloc, and the runtime/allocator aborts.
 */
const OUT_OF_MEMORY = /\bMemoryError\b|Cannot allocate memory|std::bad_alloc|[Oo]ut of memory/;

export interface ClassifyInput extends Termination {
  readonly killedFor: KillReason;
  readonly stderr: string;
  readonly wallMs: number;
  readonly limits: SandboxLimits;
  /** CPUs the run could use at once: RLIMIT_CPU counts all threads, so CPU time can beat wall time. */
  readonly cores: number;
  /** The run's memory cgroup (when there is one) OOM-killed a process. */
  readonly oomKilled?: boolean;
}

export function classifyRun(run: ClassifyInput): RunStatus {
  if (run.killedFor === "timeout") return "timeout";
  if (run.killedFor === "output") return "output-limit";
  // RLIMIT_CPU: SIGXCPU at the soft limit; SIGKILL at the hard limit (soft + 1 s) for programs
  // that ignore SIGXCPU. Nobody else in the sandbox sends SIGKILL except the program itself, so
  // a SIGKILL is called a CPU kill when enough time passed for the hard limit to be reached.
  if (run.signal === "SIGXCPU") return "cpu-limit";
  // The memory cgroup's OOM killer (cgroup mode only) ends the whole run with SIGKILL.
  if (run.oomKilled === true && (run.signal !== null || run.exitCode !== 0)) return "memory-limit";
  const hardCpuMs = (run.limits.cpuSeconds + 1) * 1000;
  if (run.signal === "SIGKILL" && run.wallMs * run.cores >= hardCpuMs) return "cpu-limit";
  const failed = run.signal !== null || run.exitCode !== 0;
  if (failed && OUT_OF_MEMORY.test(run.stderr.slice(-4096))) return "memory-limit";
  if (run.signal !== null) return "killed";
  return run.exitCode === 0 ? "ok" : "error";
}
