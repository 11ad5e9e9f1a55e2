/**
 * The token bucket's arithmetic with hand-computed answers, and the middleware's answers: the
 * RateLimit headers on every response, a 429 with Retry-After once the caller's bucket is empty.
 */
import fc from "fast-check";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { errorHandler } from "../src/errors.ts";
import { rateLimit, TokenBuckets } from "../src/rate-limit.ts";

describe("TokenBuckets", () => {
  it("serves a full bucket, then refills at rate/60 s per token", () => {
    let t = 0;
    const buckets = new TokenBuckets(() => t);
    // 30 per minute: capacity 30, one token every 2 000 ms.
    for (let i = 0; i < 30; i++)
      expect(buckets.take("k", 30)).toMatchObject({ allowed: true, remaining: 29 - i });
    expect(buckets.take("k", 30)).toEqual({ allowed: false, remaining: 0, retryAfterSeconds: 2 });
    t = 1_999;
    expect(buckets.take("k", 30).allowed).toBe(false);
    t = 2_000 + 1_999; // 1.9995 tokens accrued since t=0 → one request
    expect(buckets.take("k", 30)).toMatchObject({ allowed: true, remaining: 0 });
    expect(buckets.take("k", 30)).toEqual({ allowed: false, remaining: 0, retryAfterSeconds: 1 });
    expect(buckets.refused.get("k")).toBe(3);
    expect(buckets.take("other", 30).allowed).toBe(true); // keys are independent
    t = 10 * 60_000; // a long pause refills to capacity, not beyond
    let served = 0;
    while (buckets.take("k", 30).allowed) served++;
    expect(served).toBe(30);
  });

  it("never serves more than capacity + elapsed·rate (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 600 }),
        fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 200 }),
        (rate, gaps) => {
          let t = 0;
          const buckets = new TokenBuckets(() => t);
          let served = 0;
          for (const gap of gaps) {
            t += gap;
            if (buckets.take("k", rate).allowed) served++;
          }
          return served <= rate + Math.floor((t * rate) / 60_000) + 1e-9;
        },
      ),
    );
  });
});

describe("rateLimit middleware", () => {
  it("per caller: its own rate or the default; 429 with Retry-After when its bucket is empty", async () => {
    let refused = 0;
    const app = new Hono()
      .onError(errorHandler({ bodyBytes: 1, log: () => {} }))
      .use(async (c, next) => {
        const id = c.req.header("x-caller") ?? "anon";
        c.set("caller", id === "vip" ? { id, ratePerMinute: 3 } : { id });
        await next();
      })
      .use(rateLimit({ buckets: new TokenBuckets(() => 0), ratePerMinute: 2, onRefused: () => refused++ }))
      .get("/", (c) => c.text("ok"));
    const get = (caller: string) => app.request("/", { headers: { "x-caller": caller } });
    const first = await get("anon");
    expect([
      first.status,
      first.headers.get("ratelimit-limit"),
      first.headers.get("ratelimit-remaining"),
    ]).toEqual([200, "2", "1"]);
    expect((await get("anon")).status).toBe(200);
    const over = await get("anon");
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("30");
    expect(await over.json()).toMatchObject({ error: { code: "rate_limited" } });
    for (let i = 0; i < 3; i++) expect((await get("vip")).status).toBe(200);
    expect((await get("vip")).status).toBe(429);
    expect(refused).toBe(2);
  });
});
