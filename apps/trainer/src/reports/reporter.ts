/**
 * What a person sees while a run trains: one live progress line on a terminal (step, reward,
 * success, tokens/s, ETA), redrawn in place every step; in a log (a file, a pipe, CI) a progress
 * line every `everySteps` steps or `everySeconds` seconds, whichever comes first, and for the first
 * and the last step; and a summary table at the end.
 */
import type { EvalResult } from "../evaluate.ts";
import type { StepReport, TrainReporter } from "../run/context.ts";

/**
 * Steps are numbered as everywhere else (metrics, `--step`, publish): 0 to train.steps − 1, the
 * number of the committed step. An eval is named by the step whose weights it evaluated (`eval`
 * gets the weights' version, steps done: 0 is before the first step). The progress line of a step
 * comes when it commits, which with overlapped storage is after the next step's eval ran, so an
 * eval line waits for its step's progress line: they print in step order.
 */
export interface ProgressLogOptions {
  /** In a log: a progress line at least every this many steps (env TROUPE_PROGRESS_STEPS). */
  readonly everySteps?: number;
  /** In a log: a progress line once this many seconds passed since the last (env TROUPE_PROGRESS_SECONDS). */
  readonly everySeconds?: number;
  /** Milliseconds clock (tests). */
  readonly now?: () => number;
}

/** A 250-step run logs 12 progress lines; a slow one at least one a minute. */
export const DEFAULT_PROGRESS_EVERY_STEPS = 25;
export const DEFAULT_PROGRESS_EVERY_SECONDS = 60;

const positiveFromEnv = (value: string | undefined, fallback: number) =>
  value !== undefined && Number(value) > 0 ? Number(value) : fallback;

export function consoleReporter(
  stream: Pick<NodeJS.WriteStream, "write" | "isTTY"> = process.stderr,
  options: ProgressLogOptions = {},
): TrainReporter & { finish(): void } {
  const tty = stream.isTTY === true;
  const everySteps =
    options.everySteps ?? positiveFromEnv(process.env.TROUPE_PROGRESS_STEPS, DEFAULT_PROGRESS_EVERY_STEPS);
  const everySeconds =
    options.everySeconds ??
    positiveFromEnv(process.env.TROUPE_PROGRESS_SECONDS, DEFAULT_PROGRESS_EVERY_SECONDS);
  const clock = options.now ?? (() => performance.now());
  /** The last progress line written to a log: its step and when. */
  let logged: { step: number; at: number } | undefined;
  let lastLineLive = false;
  // The ETA's clock starts at the first step report, so engine start-up, the warm start and the
  // first eval (minutes, once) do not count as per-step time.
  let first: { step: number; at: number; seconds: number } | undefined;
  const evalLines = new Map<number, string>();
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
      const now = clock();
      first ??= { step: info.step, at: now, seconds: info.seconds };
      // A log gets the first and last steps' lines, and one every everySteps steps or everySeconds.
      const shown =
        tty ||
        logged === undefined ||
        info.step === info.totalSteps - 1 ||
        info.step - logged.step >= everySteps ||
        now - logged.at >= everySeconds * 1000;
      const left = info.totalSteps - 1 - info.step;
      const perStep =
        info.step > first.step ? (now - first.at) / 1000 / (info.step - first.step) : first.seconds;
      const done = info.step + 1;
      const width = 24;
      const filled = Math.round((done / Math.max(1, info.totalSteps)) * width);
      const bar = `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
      if (shown) {
        write(
          `${bar} step ${info.step}/${info.totalSteps - 1}  reward ${info.meanReward.toFixed(3)}  success ${(100 * info.successRate).toFixed(1)}%  ` +
            `loss ${info.loss.toFixed(4)}  ${Math.round(info.tokensPerSecond)} tok/s  ${info.seconds.toFixed(1)} s/step  ETA ${formatDuration(perStep * left)}`,
          true,
        );
        if (!tty) logged = { step: info.step, at: now };
      }
      if (!tty) lastLineLive = false;
      const line = evalLines.get(info.step);
      if (line !== undefined) {
        evalLines.delete(info.step);
        clearLive();
        write(line, false);
      }
    },
    eval(version: number, result: EvalResult) {
      const line =
        `eval ${version === 0 ? "before step 0" : `@ step ${version - 1}`}: held-out success ${(100 * result.successRate).toFixed(1)}% ` +
        `${interval(result.ci95)} on ${result.tasks} tasks, ` +
        `mean team return ${result.meanTeamReturn.toFixed(3)}`;
      if (version === 0) {
        clearLive();
        write(line, false);
      } else evalLines.set(version - 1, line);
    },
    note(message: string) {
      clearLive();
      write(message, false);
    },
    finish() {
      clearLive();
      // Evals whose step never reported (a failed commit; a command that evaluates alone).
      for (const line of [...evalLines.entries()].sort(([a], [b]) => a - b).map(([, l]) => l)) {
        write(line, false);
      }
      evalLines.clear();
    },
  };
}

/** How a summary table names an eval: by the step whose weights it evaluated (see consoleReporter). */
export function evalStepLabel(version: number): string | number {
  return version === 0 ? "start" : version - 1;
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  const s = Math.round(seconds);
  return s >= 3600
    ? `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`
    : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/** A rate in [0, 1] as a percentage with one decimal. */
export const pct = (x: number) => (100 * x).toFixed(1);
/** A difference of rates in percentage points, always signed (a gain or a loss). */
export const signedPoints = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(100 * x).toFixed(1)}`;
/** An interval as `[low, high]` in the given format; "-" when there is none (one seed). */
export const interval = (ci: readonly [number, number] | undefined, fmt: (x: number) => string = pct) =>
  ci ? `[${fmt(ci[0])}, ${fmt(ci[1])}]` : "-";

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

/** The same rows as a Markdown (GitHub) table, for files and the experiment pages. */
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
 * A second signal this soon after the first is the same request delivered twice, not a second
 * request: coreutils `timeout` and `kill -- -<pgid>` signal the process and then its whole group,
 * so a supervised run receives two SIGTERMs within microseconds.
 */
export const DUPLICATE_SIGNAL_MS = 1000;

/**
 * Graceful stop on SIGINT/SIGTERM: the first signal makes `requested()` true, so the loop commits
 * the step in flight and returns; another one at least DUPLICATE_SIGNAL_MS later exits at once (the
 * uncommitted step is redone on resume). `resumeCommand` is the command line that continues the
 * work, shown on both.
 */
export function stopOnSignal(reporter: Pick<TrainReporter, "note">, resumeCommand?: string): SignalStop {
  let firstAt: number | undefined;
  const hint = resumeCommand ? `; continue with: ${resumeCommand}` : "";
  const onSignal = (signal: NodeJS.Signals) => {
    const now = Date.now();
    if (firstAt !== undefined) {
      if (now - firstAt < DUPLICATE_SIGNAL_MS) return;
      reporter.note(`${signal}: aborted, the step in flight is not committed${hint}`);
      process.exit(130);
      return; // (process.exit returns only where a test stubs it)
    }
    firstAt = now;
    reporter.note(`${signal}: finishing and committing the current step (again to abort)${hint}`);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    requested: () => firstAt !== undefined,
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    },
  };
}
