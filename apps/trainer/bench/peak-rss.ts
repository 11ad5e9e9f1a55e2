/**
 * Runs a command in a process group of its own and samples the resident memory of the whole
 * group (every process whose group id is the leader's: tsx's loader process, the Node process
 * that trains, the sandboxes' Python processes) from /proc, as the kernel's OOM killer sees it —
 * not the V8 heap. Linux only.
 *
 * RSS counts pages shared by several processes once per process, so the sum can overstate what
 * the group takes from the machine; it never understates it.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { loadRecipeText } from "../src/recipe.ts";

export interface PeakRssResult {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Largest sampled sum of VmRSS over the group, in bytes. */
  readonly peakBytes: number;
  readonly seconds: number;
  readonly stdout: string;
  readonly stderr: string;
  /** True when the group crossed `killAboveBytes` and was killed. */
  readonly killed: boolean;
}

/** Sum of VmRSS (bytes) of the processes in process group `pgid`. */
export function groupRssBytes(pgid: number): number {
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== pgid) continue;
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
      if (m) total += Number(m[1]) * 1024;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

export async function runMeasuringPeakRss(
  command: string,
  args: readonly string[],
  options: {
    readonly cwd?: string;
    readonly env?: NodeJS.ProcessEnv;
    /** Sampling period (default 200 ms). */
    readonly intervalMs?: number;
    /** Kill the group (SIGKILL) once it holds more than this: a ceiling that protects the machine. */
    readonly killAboveBytes?: number;
    /** Kill the group after this long (default: no limit). */
    readonly timeoutMs?: number;
  } = {},
): Promise<PeakRssResult> {
  const started = performance.now();
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    detached: true, // its own process group, led by the child
    stdio: ["ignore", "pipe", "pipe"],
  });
  const pgid = child.pid!;
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  let peakBytes = 0;
  let killed = false;
  const killGroup = () => {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  const sample = () => {
    const rss = groupRssBytes(pgid);
    peakBytes = Math.max(peakBytes, rss);
    if (options.killAboveBytes !== undefined && rss > options.killAboveBytes && !killed) {
      killed = true;
      killGroup();
    }
  };
  const timer = setInterval(sample, options.intervalMs ?? 200);
  const deadline = options.timeoutMs === undefined ? undefined : setTimeout(killGroup, options.timeoutMs);
  const [exitCode, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on("close", (code, sig) => resolve([code, sig])),
  );
  clearInterval(timer);
  if (deadline) clearTimeout(deadline);
  killGroup(); // anything the command left behind in its group
  return {
    exitCode,
    signal,
    peakBytes,
    seconds: (performance.now() - started) / 1000,
    stdout,
    stderr,
    killed,
  };
}

/**
 * A recipe cut to one step of each phase, keeping its own model, sampling, batch and environment:
 * what a memory measurement of "the recipe at its own settings" runs.
 */
export function oneStepOverrides(recipeText: string): string[] {
  const recipe = loadRecipeText(recipeText);
  return ["train.steps=1", "train.evalTasks=4", ...((recipe.sft?.steps ?? 0) > 0 ? ["sft.steps=1"] : [])];
}
