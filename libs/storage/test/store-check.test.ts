/** `checkStore`: a store's own check, every failure one `StoreError` line naming the store. */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ObjectStore } from "../src/object-store.ts";
import { S3Store } from "../src/s3-store.ts";
import { checkStore, firstLine, StoreError } from "../src/store-check.ts";

/** A store of no backend: only the check matters here. */
const store = (check?: () => Promise<void>): ObjectStore =>
  ({ uri: "mem://x", ...(check === undefined ? {} : { check }) }) as unknown as ObjectStore;

describe("checkStore", () => {
  const root = mkdtempSync(join(tmpdir(), "troupe-check-"));

  it("a store without a check of its own passes; one whose check passes passes", async () => {
    await expect(checkStore(store())).resolves.toBeUndefined();
    let options: unknown;
    await checkStore(
      store(async function (this: unknown, ...args: unknown[]) {
        options = args[0];
      }),
      { write: false },
    );
    expect(options).toEqual({ write: false });
  });

  it("any other error of the check becomes a StoreError of its first line, naming the store", async () => {
    const error = await checkStore(
      store(async () => {
        throw new Error("disk on fire\n    at somewhere (stack.ts:1:1)");
      }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).storeUri).toBe("mem://x");
    expect((error as Error).message).toBe("store mem://x: Error: disk on fire");
    await expect(
      checkStore(
        store(async () => {
          throw "  not an Error  \nsecond line";
        }),
      ),
    ).rejects.toThrow(new StoreError("mem://x", "not an Error"));
    const own = new StoreError("mem://x", "already one line");
    await expect(
      checkStore(
        store(async () => {
          throw own;
        }),
      ),
    ).rejects.toBe(own);
    expect(firstLine("a\nb")).toBe("a");
  });

  it("an S3 store without credentials fails with one line naming the store", async () => {
    const saved = { ...process.env };
    try {
      for (const name of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"])
        delete process.env[name];
      process.env.AWS_EC2_METADATA_DISABLED = "true";
      process.env.AWS_SHARED_CREDENTIALS_FILE = join(root, "none");
      process.env.AWS_CONFIG_FILE = join(root, "none");
      const store = new S3Store({ bucket: "troupe-nokeys", prefix: "x", endpoint: "http://127.0.0.1:9" });
      await expect(checkStore(store)).rejects.toThrow(
        new StoreError(
          "s3://troupe-nokeys/x",
          "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
        ),
      );
      store.close();
    } finally {
      process.env = saved;
    }
  });
});
