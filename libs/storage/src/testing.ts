/**
 * The ObjectStore contract as a reusable vitest suite, outside the public index so that no runtime
 * code builds on it: libs/storage runs it against FileStore and S3Store, and a store written
 * elsewhere (apps/api's R2Store) runs the very same cases. Import it as `@troupe/storage/testing`.
 */
import { describe, expect, it } from "vitest";
import { listFolders, ObjectNotFoundError, type ObjectStore } from "./object-store.ts";

export interface ObjectStoreContractOptions {
  /** Whether the store has its own `listFolders` (the delimiter listing); default true. */
  readonly listFolders?: boolean;
}

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/**
 * Registers `describe("ObjectStore contract: <name>")` with one case per promise of the interface;
 * `make` gives a fresh, empty store for each case.
 */
export function objectStoreContract(
  name: string,
  make: () => ObjectStore | Promise<ObjectStore>,
  options: ObjectStoreContractOptions = {},
): void {
  describe(`ObjectStore contract: ${name}`, () => {
    it("put then get returns the same bytes; put replaces", async () => {
      const s = await make();
      await s.put("a/b/c.bin", new Uint8Array([0, 1, 2, 255]));
      expect(Array.from(await s.get("a/b/c.bin"))).toEqual([0, 1, 2, 255]);
      await s.put("a/b/c.bin", bytes("second"));
      expect(text(await s.get("a/b/c.bin"))).toBe("second");
    });

    it("get of a missing key throws ObjectNotFoundError naming the key; head gives undefined", async () => {
      const s = await make();
      await expect(s.get("no/such.key")).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(s.get("no/such.key")).rejects.toThrow(/no\/such\.key/);
      expect(await s.head("no/such.key")).toBeUndefined();
    });

    it("head gives the size; empty objects work", async () => {
      const s = await make();
      await s.put("x/empty", new Uint8Array());
      await s.put("x/five", bytes("12345"));
      expect(await s.head("x/five")).toEqual({ key: "x/five", size: 5 });
      expect(await s.head("x/empty")).toEqual({ key: "x/empty", size: 0 });
      expect((await s.get("x/empty")).byteLength).toBe(0);
    });

    it("list returns exactly the keys under a prefix, sorted, with sizes", async () => {
      const s = await make();
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

    it.skipIf(options.listFolders === false)(
      "listFolders gives the folders one level down (delimiter listing), sorted, none for deleted objects",
      async () => {
        const s = await make();
        for (const key of [
          "runs/b-2/config.json",
          "runs/a-1/config.json",
          "runs/a-1/steps/0/m",
          "runs/top",
          "runz/x/y",
        ])
          await s.put(key, bytes(key));
        await s.put("runs/gone/x", bytes("x"));
        await s.delete("runs/gone/x");
        expect(await s.listFolders!("runs/")).toEqual(["runs/a-1/", "runs/b-2/"]);
        expect(await s.listFolders!("runs/a-1/")).toEqual(["runs/a-1/steps/"]);
        expect(await s.listFolders!("")).toEqual(["runs/", "runz/"]);
        expect(await s.listFolders!("nothing/")).toEqual([]);
        // The generic helper gives the same answer from a plain listing (stores without listFolders).
        const plain: ObjectStore = {
          uri: s.uri,
          get: (k) => s.get(k),
          put: (k, b) => s.put(k, b),
          putIfAbsent: (k, b) => s.putIfAbsent(k, b),
          list: (p) => s.list(p),
          delete: (k) => s.delete(k),
          head: (k) => s.head(k),
        };
        expect(await listFolders(plain, "runs/")).toEqual(["runs/a-1/", "runs/b-2/"]);
        await expect(s.listFolders!("runs")).rejects.toThrow(/must be "" or end with "\/"/);
      },
    );

    it("delete removes; deleting a missing key is fine", async () => {
      const s = await make();
      await s.put("d/1", bytes("x"));
      await s.delete("d/1");
      await s.delete("d/1");
      expect(await s.head("d/1")).toBeUndefined();
      expect(await s.list("d/")).toEqual([]);
    });

    it("putIfAbsent creates once and never overwrites", async () => {
      const s = await make();
      expect(await s.putIfAbsent("m/manifest.json", bytes("first"))).toBe(true);
      expect(await s.putIfAbsent("m/manifest.json", bytes("second"))).toBe(false);
      expect(text(await s.get("m/manifest.json"))).toBe("first");
    });

    it("of 8 concurrent putIfAbsent on one key exactly one wins, and its bytes are what is stored", async () => {
      const s = await make();
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => s.putIfAbsent("race/key", bytes(`writer-${i}`))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(text(await s.get("race/key"))).toBe(`writer-${results.indexOf(true)}`);
    });

    it("rejects keys with empty, '.' or '..' segments or a leading '/'", async () => {
      const s = await make();
      for (const key of ["", "/abs", "a//b", "a/./b", "a/../b", "..", "a/"]) {
        await expect(s.put(key, bytes("x")), key).rejects.toThrow(/object key/);
      }
    });

    it("large objects round-trip (12 MiB; multipart on S3 above the threshold)", async () => {
      const s = await make();
      const big = new Uint8Array(12 * 2 ** 20);
      for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) & 255;
      await s.put("big/blob", big);
      const back = await s.get("big/blob");
      expect(back.byteLength).toBe(big.byteLength);
      expect(Buffer.from(back).equals(Buffer.from(big))).toBe(true);
    });
  });
}
