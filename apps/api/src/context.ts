/**
 * What the app's middleware and routes share: the limits, the counters and the server-side logger.
 * The request variables they hand each other are declared by the middleware that sets each one, in
 * Hono's `ContextVariableMap` (`caller` in auth.ts, `deadline` and `deadlineKept` in deadline.ts).
 */

export interface ApiLimits {
  /** Largest request body in bytes (413 above it). */
  readonly bodyBytes: number;
  /** Per-request deadline in ms, from arrival to the last byte of the answer (504 / SSE error after it). */
  readonly deadlineMs: number;
  /** Default requests per minute per key (a key's own `ratePerMinute` overrides it). */
  readonly ratePerMinute: number;
}

export const DEFAULT_LIMITS: ApiLimits = { bodyBytes: 64 * 1024, deadlineMs: 30_000, ratePerMinute: 600 };

/** Counters for logs and benchmarks (not an endpoint). */
export interface ApiStats {
  requests: number;
  byStatus: Record<number, number>;
  /** Requests refused with 429. */
  rateLimited: number;
  solves: number;
  inFlightSolves: number;
  /** Solves aborted because the client went away (mostly SSE clients closing early). */
  clientAborts: number;
}

export const newStats = (): ApiStats => ({
  requests: 0,
  byStatus: {},
  rateLimited: 0,
  solves: 0,
  inFlightSolves: 0,
  clientAborts: 0,
});

/**
 * What /healthz reports of a server (all its processes: a cluster's primary sums its workers'):
 * its counters, and the CPU time its processes have spent (user + system), of which ONNX Runtime's
 * session runs took `ortCpuMs`.
 */
export interface ServerStats extends ApiStats {
  /** Server processes counted (a cluster: its workers and the primary). */
  processes: number;
  cpuMs: number;
  ortRuns: number;
  ortCpuMs: number;
}

/** The counters that add up across a server's processes (`byStatus` adds per status). */
const SUMMED = [
  "requests",
  "rateLimited",
  "solves",
  "inFlightSolves",
  "clientAborts",
  "processes",
  "cpuMs",
  "ortRuns",
  "ortCpuMs",
] as const satisfies readonly (keyof ServerStats)[];

/** The sum of several processes' stats (one server's). */
export function sumStats(parts: readonly ServerStats[]): ServerStats {
  const total: ServerStats = { ...newStats(), processes: 0, cpuMs: 0, ortRuns: 0, ortCpuMs: 0 };
  for (const part of parts) {
    for (const key of SUMMED) total[key] += part[key];
    for (const [status, n] of Object.entries(part.byStatus)) {
      total.byStatus[Number(status)] = (total.byStatus[Number(status)] ?? 0) + n;
    }
  }
  return total;
}

export type LogLevel = "info" | "warn" | "error";
export type Logger = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/** Server-side log lines as JSON on stderr (errors include their stack; clients never see it). */
export const consoleLogger: Logger = (level, message, fields = {}) => {
  console.error(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }));
};
