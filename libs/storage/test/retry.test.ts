import { describe, expect, it } from "vitest";
import { backoffDelayMs, withRetry } from "../src/retry.ts";

describe("retry", () => {
  it("full jitter: delay = u · min(max, base · 2^(n−1))", () => {
    const o = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelayMs(1, o, 0.5)).toBe(50);
    expect(backoffDelayMs(3, o, 0.5)).toBe(200);
    expect(backoffDelayMs(5, o, 0.5)).toBe(500); // 1600 capped at 1000
  });
  it("retries retryable errors up to maxAttempts, never the others", async () => {
    let calls = 0;
    const flaky = () => (++calls < 3 ? Promise.reject(new Error("503")) : Promise.resolve("ok"));
    const opts = { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 1 };
    expect(await withRetry("op", flaky, () => true, opts)).toBe("ok");
    expect(calls).toBe(3);
    calls = 0;
    await expect(withRetry("op", flaky, () => false, opts)).rejects.toThrow("503");
    expect(calls).toBe(1);
    calls = -10;
    await expect(withRetry("op", flaky, () => true, opts)).rejects.toThrow(/op: failed after 5 attempt/);
  });
});
