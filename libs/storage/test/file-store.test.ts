/**
 * FileStore: the ObjectStore contract on a temp folder, and its own check (through `checkStore`):
 * bad store roots fail fast, one line naming the store.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileStore } from "../src/file-store.ts";
import { checkStore, StoreError } from "../src/store-check.ts";
import { objectStoreContract } from "../src/testing.ts";
import { tempFileStore } from "./stores.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

objectStoreContract("FileStore", tempFileStore);

describe("FileStore", () => {
  it("keeps its temporary files out of the key space: the folder is reserved and never listed", async () => {
    const store = await tempFileStore();
    await expect(store.put(".troupe-tmp/x", bytes("v"))).rejects.toThrow(
      'object key ".troupe-tmp/x" is reserved',
    );
    await expect(store.get(".troupe-tmp")).rejects.toThrow('object key ".troupe-tmp" is reserved');
    await store.put("a/b", bytes("v")); // goes through a temporary file under .troupe-tmp/
    expect(await store.list("")).toEqual([{ key: "a/b", size: 1 }]);
    expect(await store.listFolders("")).toEqual(["a/"]);
    expect(store.uri).toBe(`file://${store.root}`);
  });
});

describe("FileStore check", () => {
  const root = mkdtempSync(join(tmpdir(), "troupe-check-"));

  it("a folder under /proc or /sys fails at once with one line, without touching it", async () => {
    const started = performance.now();
    const error = await checkStore(new FileStore("/proc/nope")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toBe(
      "store file:///proc/nope: /proc is on proc, a kernel file system: runs cannot be stored there",
    );
    await expect(checkStore(new FileStore("/sys/kernel/troupe"))).rejects.toThrow(
      "store file:///sys/kernel/troupe: /sys/kernel is on sysfs, a kernel file system: runs cannot be stored there",
    );
    expect(performance.now() - started).toBeLessThan(10_000); // it used to never return
  });

  it("a store that is a file, or under a file, is refused naming it; a missing folder is made", async () => {
    const file = join(root, "a-file");
    writeFileSync(file, "x");
    await expect(checkStore(new FileStore(file))).rejects.toThrow(
      `store file://${file}: is a file, not a folder`,
    );
    await expect(checkStore(new FileStore(join(file, "runs")))).rejects.toThrow(
      `store file://${file}/runs: ${file} is a file, not a folder`,
    );
    const fresh = new FileStore(join(root, "new", "deeper", "runs"));
    await expect(checkStore(fresh, { write: false })).rejects.toThrow(
      `store ${fresh.uri}: the folder does not exist`,
    );
    await checkStore(fresh);
    await fresh.put("k", bytes("v"));
    expect(await fresh.list("")).toEqual([{ key: "k", size: 1 }]);
    mkdirSync(join(root, "ok"));
    await checkStore(new FileStore(join(root, "ok")), { write: false });
  });
});
