/** Test helpers: unique markers, and a /proc scan for processes that outlived a run. */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { RunRequest } from "../src/types.ts";

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
