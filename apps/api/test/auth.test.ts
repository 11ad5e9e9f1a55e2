/**
 * API keys: parsing, hashing, and authentication by digest; the middleware puts the caller on the
 * request or answers 401 through the app's error handler.
 */
import { Hono } from "hono";
import { describe, expect, it, vi } from "vitest";
import { authenticate, KNOWN_KEY_CACHE_SIZE, keyAuth, parseApiKeys, sha256Hex } from "../src/auth.ts";
import { errorHandler } from "../src/errors.ts";

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

describe("keyAuth's known keys", () => {
  it("hashes a key that matched only once; an unknown key every time, and never remembers it", async () => {
    const auth = keyAuth([{ id: "abc-key", sha256: await sha256Hex("abc"), ratePerMinute: 7 }]);
    const digest = vi.spyOn(crypto.subtle, "digest");
    try {
      for (let i = 0; i < 5; i++) {
        expect(await auth.authenticate("Bearer abc")).toEqual({ id: "abc-key", ratePerMinute: 7 });
      }
      expect(digest).toHaveBeenCalledTimes(1);
      for (let i = 0; i < 3; i++) {
        await expect(auth.authenticate("Bearer abd")).rejects.toMatchObject({ status: 401 });
      }
      expect(digest).toHaveBeenCalledTimes(4);
    } finally {
      digest.mockRestore();
    }
  });

  it("remembers at most KNOWN_KEY_CACHE_SIZE keys, the least recently used forgotten first", async () => {
    const keys = Array.from({ length: KNOWN_KEY_CACHE_SIZE + 1 }, (_, i) => `key-${i}`);
    const auth = keyAuth(
      await Promise.all(keys.map(async (key, i) => ({ id: `id-${i}`, sha256: await sha256Hex(key) }))),
    );
    for (const key of keys.slice(0, -1)) await auth.authenticate(`Bearer ${key}`);
    await auth.authenticate("Bearer key-0"); // used again: now the most recently used
    await auth.authenticate(`Bearer ${keys.at(-1)}`);
    const digest = vi.spyOn(crypto.subtle, "digest");
    try {
      // key-1, the least recently used, was pushed out by the last one: hashed again; key-0 is known.
      expect(await auth.authenticate("Bearer key-0")).toEqual({ id: "id-0" });
      expect(digest).toHaveBeenCalledTimes(0);
      expect(await auth.authenticate("Bearer key-1")).toEqual({ id: "id-1" });
      expect(digest).toHaveBeenCalledTimes(1);
    } finally {
      digest.mockRestore();
    }
  });
});

describe("authenticate middleware", () => {
  it("sets the caller, or answers 401 unauthorized without reaching the handler", async () => {
    let reached = 0;
    const app = new Hono()
      .onError(errorHandler({ bodyBytes: 1, log: () => {} }))
      .use(authenticate(keyAuth([{ id: "abc-key", sha256: await sha256Hex("abc"), ratePerMinute: 7 }])))
      .get("/", (c) => {
        reached++;
        return c.json(c.get("caller"));
      });
    const ok = await app.request("/", { headers: { authorization: "Bearer abc" } });
    expect(await ok.json()).toEqual({ id: "abc-key", ratePerMinute: 7 });
    for (const headers of [{}, { authorization: "Bearer nope" }, { authorization: "Basic abc" }] as Record<
      string,
      string
    >[]) {
      const refused = await app.request("/", { headers });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ error: { code: "unauthorized" } });
    }
    expect(reached).toBe(1);
  });
});
