import { describe, expect, it } from "vitest";
import { FileStore } from "../src/file-store.ts";
import { openStore } from "../src/open-store.ts";
import { S3Store } from "../src/s3-store.ts";

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
