import { parseSample } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/checksum.ts";
import { FileStore } from "../src/file-store.ts";
import { openStore } from "../src/open-store.ts";
import { backoffDelayMs, withRetry } from "../src/retry.ts";
import { S3Store } from "../src/s3-store.ts";
import { decodeShard, encodeShard, SHARD_FORMATS } from "../src/shard-format.ts";
import { syntheticSamples } from "./samples.ts";

describe("sha256Hex", () => {
  it("matches a known vector", async () => {
    expect(await sha256Hex(new TextEncoder().encode("abc"))).toBe(
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
  });
});

describe("openStore", () => {
  it("parses file:// and s3:// URIs", () => {
    const rel = openStore("file://./.troupe/runs", { cwd: "/srv/app" });
    expect(rel).toBeInstanceOf(FileStore);
    expect((rel as FileStore).root).toBe("/srv/app/.troupe/runs");
    expect((openStore("file:///var/runs") as FileStore).root).toBe("/var/runs");
    const s3 = openStore("s3://my-bucket/team/runs/", { s3: { region: "eu-west-1" } });
    expect(s3).toBeInstanceOf(S3Store);
    expect(s3.uri).toBe("s3://my-bucket/team/runs");
    expect(openStore("s3://my-bucket").uri).toBe("s3://my-bucket");
  });
  it("rejects bad URIs with a clear error", () => {
    expect(() => openStore("gs://b/p")).toThrow(/unsupported scheme; expected file:\/\/<folder> or s3:\/\//);
    expect(() => openStore("s3://Bad_Bucket/p")).toThrow(/bucket: not a valid S3 bucket name/);
    expect(() => openStore("s3://bucket/a/../b")).toThrow(/'\.\.' segment/);
    expect(() => openStore("file://")).toThrow(/needs a folder/);
  });
});

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

describe.each(SHARD_FORMATS)("shard format %s", (format) => {
  it("round-trips Samples exactly (optional success kept/omitted)", async () => {
    const samples = syntheticSamples(50, 3);
    const back = await decodeShard(encodeShard(samples, format), format, "shard-x", parseSample);
    expect(back).toEqual(samples);
    expect("success" in back[1]!).toBe(false);
    expect(encodeShard(samples, format)).toEqual(encodeShard(samples, format)); // deterministic bytes
  });
  it("names shard, row and field of an invalid row", async () => {
    const samples = syntheticSamples(3, 4);
    (samples[2]!.provenance as { step: number }).step = 1.5;
    await expect(decodeShard(encodeShard(samples, format), format, "shard-y", parseSample)).rejects.toThrow(
      "shard-y: row 2: provenance.step:",
    );
  });
  it("rejects a truncated shard naming it", async () => {
    const bytes = encodeShard(syntheticSamples(20, 5), format);
    await expect(
      decodeShard(bytes.subarray(0, bytes.length - 40), format, "shard-z", parseSample),
    ).rejects.toThrow(/^shard-z: /);
  });
});
