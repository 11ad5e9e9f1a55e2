/**
 * R2Store against a real R2 bucket binding: workerd's local R2 implementation, reached from Node
 * through wrangler's getPlatformProxy (in memory, nothing persisted). The cases mirror libs/storage's
 * ObjectStore contract test, plus the store prefix and list paging.
 */
import { ObjectNotFoundError } from "@troupe/storage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getPlatformProxy } from "wrangler";
import { type R2BucketBinding, R2Store } from "../src/worker/r2-store.ts";

const CONFIG = new URL("../../../infra/workers/wrangler.toml", import.meta.url).pathname;
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

let proxy: Awaited<ReturnType<typeof getPlatformProxy<{ TEAMS: R2BucketBinding }>>>;
let bucket: R2BucketBinding;
let folder = 0;
/** A store in a fresh folder of the one bucket, so cases don't see each other's keys. */
const fresh = () => new R2Store(bucket, { prefix: `case-${++folder}`, bucketName: "troupe-teams" });

beforeAll(async () => {
  proxy = await getPlatformProxy<{ TEAMS: R2BucketBinding }>({ configPath: CONFIG, persist: false });
  bucket = proxy.env.TEAMS;
}, 60_000);
afterAll(async () => {
  await proxy?.dispose();
});

describe("R2Store (ObjectStore contract over an R2 binding)", () => {
  it("put then get returns the same bytes; put replaces", async () => {
    const s = fresh();
    await s.put("a/b/c.bin", new Uint8Array([0, 1, 2, 255]));
    expect(Array.from(await s.get("a/b/c.bin"))).toEqual([0, 1, 2, 255]);
    await s.put("a/b/c.bin", bytes("second"));
    expect(text(await s.get("a/b/c.bin"))).toBe("second");
  });

  it("get of a missing key throws ObjectNotFoundError naming the key and the store; head gives undefined", async () => {
    const s = fresh();
    await expect(s.get("no/such.key")).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(s.get("no/such.key")).rejects.toThrow(
      `r2://troupe-teams/${s.uri.split("/").at(-1)}: no object at "no/such.key"`,
    );
    expect(await s.head("no/such.key")).toBeUndefined();
  });

  it("head gives the size under the store's key; empty objects work", async () => {
    const s = fresh();
    await s.put("x/empty", new Uint8Array());
    await s.put("x/five", bytes("12345"));
    expect(await s.head("x/five")).toEqual({ key: "x/five", size: 5 });
    expect(await s.head("x/empty")).toEqual({ key: "x/empty", size: 0 });
    expect((await s.get("x/empty")).byteLength).toBe(0);
  });

  it("list returns exactly the keys under a prefix, sorted, with sizes, without the store prefix", async () => {
    const s = fresh();
    for (const key of ["p/b/2", "p/a/1", "p/a/10", "pq/x", "q/p/1"]) await s.put(key, bytes(key));
    expect(await s.list("p/")).toEqual([
      { key: "p/a/1", size: 5 },
      { key: "p/a/10", size: 6 },
      { key: "p/b/2", size: 5 },
    ]);
    expect((await s.list("p/a/1")).map((o) => o.key)).toEqual(["p/a/1", "p/a/10"]);
    expect((await s.list("p")).map((o) => o.key)).toEqual(["p/a/1", "p/a/10", "p/b/2", "pq/x"]);
    expect(await s.list("nothing/")).toEqual([]);
  });

  it("list follows R2's cursor across pages (page size 2, 7 keys: 4 requests)", async () => {
    let listCalls = 0;
    const counting: R2BucketBinding = {
      get: (key) => bucket.get(key),
      head: (key) => bucket.head(key),
      put: (key, value, options) => bucket.put(key, value, options),
      delete: (keys) => bucket.delete(keys),
      list: (options) => {
        listCalls += 1;
        return bucket.list(options);
      },
    };
    const s = new R2Store(counting, { prefix: `case-${++folder}`, listPageSize: 2 });
    const keys = Array.from({ length: 7 }, (_, i) => `many/${i}`);
    await Promise.all(keys.map((k) => s.put(k, bytes("1"))));
    await s.put("other/x", bytes("1"));
    expect((await s.list("many/")).map((o) => o.key)).toEqual(keys);
    expect(listCalls).toBe(4);
    expect(() => new R2Store(bucket, { listPageSize: 1001 })).toThrow(
      "R2Store listPageSize: 1001 is not an integer in [1, 1000]",
    );
  });

  it("a store with a prefix sees only its folder; the bucket holds the prefixed keys", async () => {
    const a = new R2Store(bucket, { prefix: "iso/a" });
    const b = new R2Store(bucket, { prefix: "iso/b" });
    await a.put("k", bytes("from a"));
    expect(await b.head("k")).toBeUndefined();
    expect(await a.list("")).toEqual([{ key: "k", size: 6 }]);
    expect((await bucket.head("iso/a/k"))?.size).toBe(6);
    expect(a.uri).toBe("r2://bucket/iso/a");
  });

  it("delete removes; deleting a missing key is fine", async () => {
    const s = fresh();
    await s.put("d/1", bytes("x"));
    await s.delete("d/1");
    await s.delete("d/1");
    expect(await s.head("d/1")).toBeUndefined();
    expect(await s.list("d/")).toEqual([]);
  });

  it("putIfAbsent creates once and never overwrites", async () => {
    const s = fresh();
    expect(await s.putIfAbsent("m/manifest.json", bytes("first"))).toBe(true);
    expect(await s.putIfAbsent("m/manifest.json", bytes("second"))).toBe(false);
    expect(text(await s.get("m/manifest.json"))).toBe("first");
  });

  it("of 8 concurrent putIfAbsent on one key exactly one wins, and its bytes are what is stored", async () => {
    const s = fresh();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => s.putIfAbsent("race/key", bytes(`writer-${i}`))),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(text(await s.get("race/key"))).toBe(`writer-${results.indexOf(true)}`);
  });

  it("rejects keys with empty, '.' or '..' segments or a leading '/', and bad prefixes", async () => {
    const s = fresh();
    for (const key of ["", "/abs", "a//b", "a/./b", "a/../b", "..", "a/"]) {
      await expect(s.put(key, bytes("x")), key).rejects.toThrow(/object key/);
    }
    expect(() => new R2Store(bucket, { prefix: "/teams" })).toThrow(/object key "\/teams" starts with "\/"/);
  });
});
