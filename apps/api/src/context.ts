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

export type LogLevel = "info" | "warn" | "error";
export type Logger = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/** Server-side log lines as JSON on stderr (errors include their stack; clients never see it). */
export const consoleLogger: Logger = (level, message, fields = {}) => {
  console.error(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }));
};
