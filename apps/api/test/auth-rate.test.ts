/**
 * Units with hand-computed answers: the token bucket's arithmetic, key parsing and hashing, and the
 * mapping of solve()'s field paths onto the request body.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bodyPath } from "../src/app.ts";
import { keyAuth, parseApiKeys, sha256Hex } from "../src/auth.ts";
import { TokenBuckets } from "../src/rate-limit.ts";

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

describe("API keys", () => {
  it("sha256Hex matches the known digest of 'abc'", async () => {
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("parses the JSON form and the comma-separated form; bad entries name the field", () => {
    const digest = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    expect(parseApiKeys(`[{"id":"ci","sha256":"${digest}","ratePerMinute":5}]`, "keys.json")).toEqual([
      { id: "ci", sha256: digest, ratePerMinute: 5 },
    ]);
    expect(parseApiKeys(` ${digest} ,`, "TROUPE_API_KEY_HASHES")).toEqual([
      { id: "key-ba7816bf", sha256: digest },
    ]);
    expect(parseApiKeys("", "env")).toEqual([]);
    expect(() => parseApiKeys(`[{"id":"a","sha256":"ABC"}]`, "keys.json")).toThrow(
      /^keys\.json: 0\.sha256: must be/,
    );
    expect(() => parseApiKeys(`[{"id":"a","sha256":"${digest}","extra":1}]`, "k")).toThrow(/k: 0: .*extra/);
    expect(() =>
      parseApiKeys(`[{"id":"a","sha256":"${digest}"},{"id":"a","sha256":"${digest}"}]`, "k"),
    ).toThrow('k: duplicate key id "a"');
    expect(() => parseApiKeys("[{", "k")).toThrow(/^k: not valid JSON/);
  });

  it("authenticates by the key's digest only", async () => {
    const auth = keyAuth([{ id: "abc-key", sha256: await sha256Hex("abc") }]);
    expect(await auth.authenticate("Bearer abc")).toEqual({ id: "abc-key" });
    expect(await auth.authenticate("bearer   abc")).toEqual({ id: "abc-key" });
    for (const header of [undefined, "", "Bearer abcd", "Bearer", "Token abc", `Bearer ${"a".repeat(600)}`]) {
      await expect(auth.authenticate(header)).rejects.toMatchObject({ status: 401, code: "unauthorized" });
    }
  });
});

describe("bodyPath", () => {
  it("maps solve()'s paths onto the HTTP body", () => {
    expect(bodyPath(["task", "payload", "grid", 3])).toEqual(["input", "task", "payload", "grid", 3]);
    expect(bodyPath(["generate", "seed"])).toEqual(["input", "generate", "seed"]);
    expect(bodyPath(["options", "sampling", "temperature"])).toEqual(["options", "temperature"]);
    expect(bodyPath(["options", "maxTurns"])).toEqual(["options", "maxTurns"]);
  });
});
