/**
 * When to retry a request to the server, and how long to wait first.
 *
 * Retried: 429 (rate limited / queue full), every 5xx (server overloaded, restarting, reloading an
 * adapter), timeouts and network failures (connection refused or reset, a socket closed mid-body).
 * Never retried: other 4xx (the request itself is wrong — a retry would get the same answer), and
 * well-formed responses that fail validation (a server bug, not a transient state).
 *
 * Backoff is exponential with "equal jitter" (AWS architecture blog, "Exponential Backoff And
 * Jitter"): the cap grows as initial·multiplier^attempt up to max, and the wait is drawn uniformly
 * from [cap/2, cap]. Half the cap keeps the wait growing with the attempt number; the random half
 * de-synchronises many clients that failed together (a server restart) so they do not return as
 * one wave. A server's Retry-After, when given, replaces the computed wait (capped by
 * maxRetryAfterMs so a misconfigured server cannot stall a rollout for hours).
 *
 * Written here rather than taken from p-retry: the decision depends on the HTTP status and on
 * Retry-After, and the engine must release its concurrency slot while waiting, which is simplest
 * with the loop in view (see http.ts).
 */
import { z } from "zod";

export const BackoffConfigSchema = z.object({
  /** Retries after the first attempt; 0 disables retrying. */
  retries: z.number().int().min(0).default(4),
  /** Cap of the first wait (ms). */
  initialDelayMs: z.number().min(0).default(250),
  /** Growth of the cap per retry. */
  multiplier: z.number().min(1).default(2),
  /** Largest cap of a computed wait (ms). */
  maxDelayMs: z.number().min(0).default(10_000),
  /** Largest wait honoured from a Retry-After header (ms). */
  maxRetryAfterMs: z.number().min(0).default(60_000),
});
export type BackoffConfig = z.infer<typeof BackoffConfigSchema>;

/** Whether an HTTP status is worth retrying: 429 and 5xx only. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/**
 * Wait before retry number `retry` (0 = the first retry), in ms:
 *   cap = min(maxDelayMs, initialDelayMs · multiplier^retry);  wait = cap/2 + u·cap/2,  u ~ U[0, 1).
 */
export function backoffDelayMs(retry: number, config: BackoffConfig, random: () => number): number {
  const cap = Math.min(config.maxDelayMs, config.initialDelayMs * config.multiplier ** retry);
  return cap / 2 + random() * (cap / 2);
}

/**
 * A Retry-After header in ms: either delta-seconds ("2", "0.5") or an HTTP date (RFC 9110 §10.2.3).
 * Undefined when absent or unreadable; a date in the past gives 0.
 */
export function parseRetryAfterMs(header: string | null, now: number = Date.now()): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (text === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
