import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DUPLICATE_SIGNAL_MS, stopOnSignal } from "../../src/reports/reporter.ts";

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
