/** The API's shared settings and counters: default limits, fresh stats, stats summed over processes, the JSON log line. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { consoleLogger, DEFAULT_LIMITS, newStats, type ServerStats, sumStats } from "../src/context.ts";

const processStats = (over: Partial<ServerStats>): ServerStats => ({
  ...newStats(),
  processes: 1,
  cpuMs: 0,
  ortRuns: 0,
  ortCpuMs: 0,
  ...over,
});

afterEach(() => vi.restoreAllMocks());

describe("context", () => {
  it("limits default to 64 KiB bodies, 30 s deadlines and 600 requests a minute; stats start at zero", () => {
    expect(DEFAULT_LIMITS).toEqual({ bodyBytes: 65_536, deadlineMs: 30_000, ratePerMinute: 600 });
    const counters = ["requests", "rateLimited", "solves", "inFlightSolves", "clientAborts"] as const;
    // every counter 0, no status seen yet, and no other field
    expect(newStats()).toEqual({ byStatus: {}, ...Object.fromEntries(counters.map((name) => [name, 0])) });
    expect(newStats()).not.toBe(newStats()); // each server its own counters
  });

  it("sumStats adds every counter and each status's count over a server's processes", () => {
    const primary = processStats({ requests: 2, byStatus: { 200: 2 }, cpuMs: 10 });
    const worker = processStats({
      requests: 5,
      byStatus: { 200: 3, 429: 2 },
      rateLimited: 2,
      solves: 3,
      inFlightSolves: 1,
      clientAborts: 1,
      cpuMs: 90,
      ortRuns: 12,
      ortCpuMs: 60,
    });
    expect(sumStats([primary, worker])).toEqual({
      requests: 7,
      byStatus: { 200: 5, 429: 2 },
      rateLimited: 2,
      solves: 3,
      inFlightSolves: 1,
      clientAborts: 1,
      processes: 2,
      cpuMs: 100,
      ortRuns: 12,
      ortCpuMs: 60,
    });
    expect(sumStats([])).toEqual({ ...newStats(), processes: 0, cpuMs: 0, ortRuns: 0, ortCpuMs: 0 });
  });

  it("consoleLogger writes one JSON line to stderr: time, level, message, then the fields", () => {
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: string) => void lines.push(line));
    consoleLogger("warn", "slow solve", { team: "tiny", ms: 12 });
    consoleLogger("info", "started");
    expect(lines).toHaveLength(2);
    const first = JSON.parse(lines[0]!);
    expect(Object.keys(first)).toEqual(["time", "level", "message", "team", "ms"]);
    expect(first).toMatchObject({ level: "warn", message: "slow solve", team: "tiny", ms: 12 });
    expect(new Date(first.time).toISOString()).toBe(first.time);
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: "info", message: "started" });
  });
});
