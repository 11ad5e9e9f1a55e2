/**
 * R2Store against a real R2 bucket binding: workerd's local R2 implementation, reached from Node
 * through wrangler's getPlatformProxy (in memory, nothing persisted). It runs libs/storage's
 * ObjectStore contract (`@troupe/storage/testing`), plus the store prefix and list paging.
 */
import { objectStoreContract } from "@troupe/storage/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getPlatformProxy } from "wrangler";
import { type R2BucketBinding, R2Store } from "../../src/worker/r2-store.ts";

const CONFIG = new URL("../../../../infra/workers/wrangler.toml", import.meta.url).pathname;
const bytes = (text: string) => new TextEncoder().encode(text);

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

// Every store `fresh` makes sits in a folder of the bucket, so the contract's keys are checked
// under the store prefix and listed without it. R2Store has no delimiter listing of its own.
objectStoreContract("R2Store over an R2 binding", fresh, { listFolders: false });

describe("R2Store over an R2 binding: errors, the store prefix and list paging", () => {
  it("get of a missing key throws an error naming the bucket, the folder and the key", async () => {
    const s = fresh();
    await expect(s.get("no/such.key")).rejects.toThrow(
      `r2://troupe-teams/${s.uri.split("/").at(-1)}: no object at "no/such.key"`,
    );
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

  it("rejects a prefix with a leading '/'", () => {
    expect(() => new R2Store(bucket, { prefix: "/teams" })).toThrow(/object key "\/teams" starts with "\/"/);
  });
});
