/**
 * Test helpers: unique markers, a /proc scan for processes that outlived a run, and programs more
 * than one test runs.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { RunRequest, RunResult } from "../src/types.ts";

/** A random token to put in a process's command line, so the test can look for it in /proc. */
export function marker(): string {
  return `m${randomBytes(8).toString("hex")}`;
}

/**
 * Python run as `python3 -c CODE` (a command, not a file) so that the marker, in a comment at the
 * top of CODE, appears in the command line of the process and of every fork of it.
 */
export function markedPython(mark: string, code: string, limits: RunRequest["limits"] = {}): RunRequest {
  return { language: "command", argv: ["/usr/bin/python3", "-c", `# ${mark}\n${code}`], limits };
}

/** Host pids whose command line contains `mark` (excluding this process). */
export function processesWith(mark: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "latin1").includes(mark)) found.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

/**
 * Host pids carrying `mark` once `ms` have passed: what is still there a fixed time after a run
 * (where `survivorsAfter` polls until they are gone).
 */
export async function processesAfter(mark: string, ms: number): Promise<number[]> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return processesWith(mark);
}

/** Polls until no process carries `mark`, for at most `ms`. */
// The kernel tears a killed PID namespace down asynchronously: on a loaded 2-core machine (the full
// suite next to a training job) 16 forked processes took longer than 500 ms to go. The property is
// that they all die, so allow seconds for it (the poll returns as soon as they are gone).
export async function survivorsAfter(mark: string, ms = 15_000): Promise<number[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left = processesWith(mark);
    if (left.length === 0 || Date.now() >= until) return left;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Python that forks children (each sleeps 5 s) until fork fails, then prints `stopped <children>
 * <errno>`: how many processes a limit of `processes` lets a program start (3 s of wall clock).
 */
export function forkUntilRefused(processes: number): RunRequest {
  const code = [
    "import os, time",
    "children = 0",
    "try:",
    "    for _ in range(1000):",
    "        if os.fork() == 0:",
    "            time.sleep(5)",
    "            os._exit(0)",
    "        children += 1",
    "except OSError as e:",
    "    print('stopped', children, e.errno)",
  ].join("\n");
  return { language: "python", code, limits: { processes, wallMs: 3000 } };
}

/** Runs a Python program given as its lines (`python3 file.py` in the sandbox), with optional limits. */
export function runPython(
  sandbox: { run(request: RunRequest): Promise<RunResult> },
  lines: readonly string[],
  limits?: RunRequest["limits"],
): Promise<RunResult> {
  return sandbox.run({ language: "python", code: lines.join("\n"), ...(limits ? { limits } : {}) });
}
