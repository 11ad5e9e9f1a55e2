/**
 * What a person sees while a run trains: one live progress line on a terminal (step, reward,
 * success, tokens/s, ETA), plain log lines otherwise (CI, files), and a summary table at the end.
 */
import type { EvalResult } from "./evaluate.ts";
import type { StepReport, TrainReporter } from "./train.ts";

export function consoleReporter(
  stream: NodeJS.WriteStream = process.stderr,
): TrainReporter & { finish(): void } {
  const tty = stream.isTTY === true;
  let lastLineLive = false;
  const started = performance.now();
  const write = (line: string, live: boolean) => {
    if (tty) {
      stream.write(`\r\x1b[2K${line}${live ? "" : "\n"}`);
      lastLineLive = live;
    } else {
      stream.write(`${line}\n`);
    }
  };
  const clearLive = () => {
    if (tty && lastLineLive) stream.write("\r\x1b[2K");
    lastLineLive = false;
  };
  return {
    step(info: StepReport) {
      const done = info.step + 1;
      const elapsed = (performance.now() - started) / 1000;
      const eta = done > 0 ? (elapsed / done) * (info.totalSteps - done) : 0;
      const width = 24;
      const filled = Math.round((done / Math.max(1, info.totalSteps)) * width);
      const bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
      write(
        `${bar} step ${done}/${info.totalSteps}  reward ${info.meanReward.toFixed(3)}  success ${(100 * info.successRate).toFixed(1)}%  ` +
          `loss ${info.loss.toFixed(4)}  ${Math.round(info.tokensPerSecond)} tok/s  ${info.seconds.toFixed(1)} s/step  ETA ${formatDuration(eta)}`,
        true,
      );
      if (!tty) lastLineLive = false;
    },
    eval(step: number, result: EvalResult) {
      clearLive();
      write(
        `eval @ step ${step}: held-out success ${(100 * result.successRate).toFixed(1)}% ` +
          `[${(100 * result.ci95[0]).toFixed(1)}, ${(100 * result.ci95[1]).toFixed(1)}] on ${result.tasks} tasks, ` +
          `mean team return ${result.meanTeamReturn.toFixed(3)}`,
        false,
      );
    },
    note(message: string) {
      clearLive();
      write(message, false);
    },
    finish() {
      clearLive();
    },
  };
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  const s = Math.round(seconds);
  return s >= 3600
    ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`
    : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/** A plain text table. */
export function table(rows: readonly Record<string, string | number>[]): string {
  if (rows.length === 0) return "(none)";
  const cols = Object.keys(rows[0]!);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(width[i]!))
      .join("  ")
      .trimEnd();
  return [
    line(cols),
    line(width.map((w) => "-".repeat(w))),
    ...rows.map((r) => line(cols.map((c) => String(r[c] ?? "")))),
  ].join("\n");
}

/** The same rows as a Markdown (GitHub) table, for files and the README. */
export function markdownTable(rows: readonly Record<string, string | number>[]): string {
  if (rows.length === 0) return "(none)";
  const cols = Object.keys(rows[0]!);
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [
    line(cols),
    line(cols.map(() => "---")),
    ...rows.map((r) => line(cols.map((c) => String(r[c] ?? "")))),
  ].join("\n");
}

export interface SignalStop {
  /** True once SIGINT or SIGTERM arrived: commit the step in flight and return. */
  readonly requested: () => boolean;
  /** Removes the handlers (a command that returns to its caller instead of exiting). */
  dispose(): void;
}

/**
 * Graceful stop on SIGINT/SIGTERM: the first signal makes `requested()` true, so the loop commits
 * the step in flight and returns; a second one exits at once (the uncommitted step is redone on
 * resume).
 */
export function stopOnSignal(reporter: Pick<TrainReporter, "note">): SignalStop {
  let stop = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop) process.exit(130);
    stop = true;
    reporter.note(`${signal}: finishing and committing the current step (again to abort)`);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    requested: () => stop,
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}
