import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  BackoffConfigSchema,
  backoffDelayMs,
  isRetryableStatus,
  parseRetryAfterMs,
  sleep,
} from "../src/retry.ts";

describe("retry policy", () => {
  const backoff = BackoffConfigSchema.parse({ initialDelayMs: 100, multiplier: 2, maxDelayMs: 1000 });

  it("retries 429 and 5xx only", () => {
    expect([429, 500, 502, 503, 504, 599].map(isRetryableStatus)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([200, 400, 401, 403, 404, 408, 409, 422].map(isRetryableStatus)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it("waits between cap/2 and cap, the cap doubling up to maxDelayMs", () => {
    // caps: 100, 200, 400, 800, 1000, 1000
    expect([0, 1, 2, 3, 4, 5].map((r) => backoffDelayMs(r, backoff, () => 0))).toEqual([
      50, 100, 200, 400, 500, 500,
    ]);
    expect([0, 1, 2, 3, 4, 5].map((r) => backoffDelayMs(r, backoff, () => 1))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(backoffDelayMs(2, backoff, () => 0.25)).toBe(250);
  });

  it("property: the wait lies in [cap/2, cap] and its lower bound never shrinks", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 30 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retry, u) => {
          const cap = Math.min(1000, 100 * 2 ** retry);
          const wait = backoffDelayMs(retry, backoff, () => u);
          expect(wait).toBeGreaterThanOrEqual(cap / 2);
          expect(wait).toBeLessThanOrEqual(cap);
          expect(backoffDelayMs(retry + 1, backoff, () => 0)).toBeGreaterThanOrEqual(
            backoffDelayMs(retry, backoff, () => 0),
          );
        },
      ),
    );
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");
    expect(parseRetryAfterMs("2", now)).toBe(2000);
    expect(parseRetryAfterMs("0.5", now)).toBe(500);
    expect(parseRetryAfterMs("Wed, 21 Oct 2015 07:28:03 GMT", now)).toBe(3000);
    expect(parseRetryAfterMs("Wed, 21 Oct 2015 07:27:00 GMT", now)).toBe(0);
    expect(parseRetryAfterMs(null, now)).toBeUndefined();
    expect(parseRetryAfterMs("soon", now)).toBeUndefined();
  });

  it("sleep resolves after the wait, or rejects with the abort reason at once", async () => {
    const t0 = performance.now();
    await sleep(20);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(15);
    const controller = new AbortController();
    const waiting = sleep(60_000, controller.signal);
    controller.abort(new Error("closed"));
    await expect(waiting).rejects.toThrow("closed");
    await expect(sleep(1, AbortSignal.abort(new Error("already")))).rejects.toThrow("already");
  });
});
