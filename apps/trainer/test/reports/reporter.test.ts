import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { consoleReporter, DUPLICATE_SIGNAL_MS, stopOnSignal } from "../../src/reports/reporter.ts";

describe("stopOnSignal", () => {
  let notes: string[];
  let exit: ReturnType<typeof vi.spyOn>;
  beforeEach(() => {
    notes = [];
    vi.useFakeTimers({ toFake: ["Date"] });
    exit = vi.spyOn(process, "exit").mockImplementation((() => undefined) as never);
  });
  afterEach(() => {
    exit.mockRestore();
    vi.useRealTimers();
  });

  it("takes the signal twice delivered by a group kill (timeout, kill -- -pgid) as one graceful stop", () => {
    const stop = stopOnSignal({ note: (line) => notes.push(line) }, "resume-me");
    try {
      expect(stop.requested()).toBe(false);
      process.emit("SIGTERM", "SIGTERM");
      vi.advanceTimersByTime(DUPLICATE_SIGNAL_MS - 1);
      process.emit("SIGTERM", "SIGTERM");
      expect(stop.requested()).toBe(true);
      expect(exit).not.toHaveBeenCalled();
      expect(notes).toEqual([
        "SIGTERM: finishing and committing the current step (again to abort); continue with: resume-me",
      ]);
    } finally {
      stop.dispose();
    }
  });

  it("aborts on a second signal sent later", () => {
    const stop = stopOnSignal({ note: (line) => notes.push(line) });
    try {
      process.emit("SIGINT", "SIGINT");
      vi.advanceTimersByTime(DUPLICATE_SIGNAL_MS);
      process.emit("SIGINT", "SIGINT");
      expect(exit).toHaveBeenCalledWith(130);
      expect(notes).toEqual([
        "SIGINT: finishing and committing the current step (again to abort)",
        "SIGINT: aborted, the step in flight is not committed",
      ]);
    } finally {
      stop.dispose();
    }
  });
});

describe("consoleReporter's progress", () => {
  const report = (step: number, totalSteps = 250) => ({
    step,
    totalSteps,
    meanReward: 0.5,
    successRate: 0.25,
    tokensPerSecond: 1000,
    seconds: 2,
    samples: 16,
    loss: 0.1234,
  });
  const sink = (isTTY: boolean) => {
    const written: string[] = [];
    return { written, stream: { isTTY, write: (chunk: string) => written.push(chunk) > 0 } };
  };

  it("in a log: the first and last steps, and a line every everySteps steps", () => {
    const { written, stream } = sink(false);
    const reporter = consoleReporter(stream, { everySteps: 25, everySeconds: 1e9, now: () => 0 });
    for (let step = 0; step < 250; step++) reporter.step(report(step));
    reporter.finish();
    const steps = written.map((line) => Number(/ step (\d+)\/249 /.exec(line)?.[1]));
    expect(steps).toEqual([0, 25, 50, 75, 100, 125, 150, 175, 200, 225, 249]);
    expect(written.every((line) => line.endsWith("\n") && !line.includes("\r"))).toBe(true);
    expect(written[0]).toBe(
      "[------------------------] step 0/249  reward 0.500  success 25.0%  loss 0.1234  1000 tok/s  2.0 s/step  ETA 8m18s\n",
    );
  });

  it("in a log: a line once everySeconds passed, however few steps", () => {
    const { written, stream } = sink(false);
    let clock = 0;
    const reporter = consoleReporter(stream, { everySteps: 1000, everySeconds: 30, now: () => clock });
    for (let step = 0; step < 10; step++) {
      reporter.step(report(step, 10));
      clock += 10_000; // 10 s a step
    }
    const steps = written.map((line) => Number(/ step (\d+)\/9 /.exec(line)?.[1]));
    expect(steps).toEqual([0, 3, 6, 9]);
  });

  it("in a log: an eval line prints even when its step's progress line does not", () => {
    const { written, stream } = sink(false);
    const reporter = consoleReporter(stream, { everySteps: 25, everySeconds: 1e9, now: () => 0 });
    reporter.step(report(0));
    reporter.eval(2, { successRate: 0.5, ci95: [0.4, 0.6], tasks: 20, meanTeamReturn: 1 } as never);
    reporter.step(report(1));
    expect(written).toHaveLength(2);
    expect(written[1]).toBe(
      "eval @ step 1: held-out success 50.0% [40.0, 60.0] on 20 tasks, mean team return 1.000\n",
    );
  });

  it("on a terminal: every step redraws the one live line in place", () => {
    const { written, stream } = sink(true);
    const reporter = consoleReporter(stream, { everySteps: 25, now: () => 0 });
    for (let step = 0; step < 3; step++) reporter.step(report(step, 3));
    reporter.note("done");
    expect(written).toHaveLength(5);
    expect(written.slice(0, 3).every((line) => line.startsWith("\r\x1b[2K[") && !line.endsWith("\n"))).toBe(
      true,
    );
    expect(written.slice(3)).toEqual(["\r\x1b[2K", "\r\x1b[2Kdone\n"]);
  });
});
