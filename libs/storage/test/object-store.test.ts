/**
 * The ObjectStore interface's helpers: key and folder-prefix checks, joining, and the fallbacks a
 * store without a method of its own gets. (The interface's promises themselves are the contract
 * suite in src/testing.ts, run against each store: test/file-store.test.ts, test/s3-store.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { checkFolderPrefix, checkKey, getIfPresent, joinKey, listFolders } from "../src/object-store.ts";
import { memoryStore } from "./memory-store.ts";

const mapStore = (keys: readonly string[]) => memoryStore(keys);

describe("object keys", () => {
  it("checkKey returns a good key and names what is wrong with a bad one", () => {
    expect(checkKey("runs/r/steps/00000001/manifest.json")).toBe("runs/r/steps/00000001/manifest.json");
    expect(() => checkKey("")).toThrow("object key is empty");
    expect(() => checkKey("/etc/passwd")).toThrow('object key "/etc/passwd" starts with "/"');
    expect(() => checkKey("a\\b")).toThrow('has "\\" or NUL');
    expect(() => checkKey("a\0b")).toThrow('has "\\" or NUL');
    for (const key of ["a//b", "a/./b", "a/../b", "a/", "..", "."])
      expect(() => checkKey(key)).toThrow(`object key "${key}" has an empty, "." or ".." segment`);
  });

  it("joinKey joins with '/' and skips empty parts (an empty store prefix)", () => {
    expect(joinKey("", "runs", "r")).toBe("runs/r");
    expect(joinKey("p", "", "k")).toBe("p/k");
    expect(joinKey()).toBe("");
  });

  it("checkFolderPrefix: the root, or a good key ending in '/'", () => {
    expect(checkFolderPrefix("")).toBe("");
    expect(checkFolderPrefix("runs/r/")).toBe("runs/r/");
    expect(() => checkFolderPrefix("runs/r")).toThrow('folder prefix "runs/r" must be "" or end with "/"');
    expect(() => checkFolderPrefix("runs//")).toThrow('has an empty, "." or ".." segment');
  });
});

describe("store helpers", () => {
  it("listFolders without the store's own: the distinct folders directly below the prefix, sorted", async () => {
    const store = mapStore(["runs/b/x", "runs/a/y/z", "runs/a/w", "runs/top", "other/k"]);
    expect(await listFolders(store, "")).toEqual(["other/", "runs/"]);
    expect(await listFolders(store, "runs/")).toEqual(["runs/a/", "runs/b/"]);
    expect(await listFolders(store, "runs/a/")).toEqual(["runs/a/y/"]);
    expect(await listFolders(store, "none/")).toEqual([]);
    await expect(listFolders(store, "runs")).rejects.toThrow('must be "" or end with "/"');
  });

  it("listFolders uses the store's delimiter listing when it has one", async () => {
    const store = { ...mapStore(["a/b"]), listFolders: async (prefix: string) => [`${prefix}own/`] };
    expect(await listFolders(store, "x/")).toEqual(["x/own/"]);
  });

  it("getIfPresent: the bytes, undefined for a missing key, other errors passed on", async () => {
    const store = mapStore(["k"]);
    expect(new TextDecoder().decode(await getIfPresent(store, "k"))).toBe("k");
    expect(await getIfPresent(store, "missing")).toBeUndefined();
    const broken = { ...store, get: async () => Promise.reject(new Error("connection reset")) };
    await expect(getIfPresent(broken, "k")).rejects.toThrow("connection reset");
  });
});
