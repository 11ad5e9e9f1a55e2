/** Store factories for the tests: a fresh temp folder, or a fresh prefix in the Ceph test bucket. */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import { FileStore } from "../src/file-store.ts";
import type { ObjectStore } from "../src/object-store.ts";
import { S3Store, type S3StoreOptions } from "../src/s3-store.ts";

export const TEST_BUCKET = "troupe-test";
let counter = 0;

export async function tempFileStore(): Promise<FileStore> {
  return new FileStore(await mkdtemp(join(tmpdir(), "troupe-storage-")));
}

/** An S3Store on the Ceph gateway (or `endpoint`, e.g. a fault proxy in front of it). */
export function cephStore(prefix?: string, overrides: Partial<S3StoreOptions> = {}): S3Store {
  const s3 = inject("s3");
  return new S3Store({
    bucket: TEST_BUCKET,
    prefix: prefix ?? `t-${process.pid}-${Date.now()}-${counter++}`,
    endpoint: s3.endpoint,
    region: s3.region,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    createBucket: true,
    ...overrides,
  });
}

export const storeKinds: { name: string; make: () => Promise<ObjectStore> }[] = [
  { name: "FileStore", make: tempFileStore },
  {
    name: "S3Store (Ceph RGW)",
    // Small multipart threshold so the 12 MiB case goes through lib-storage's multipart upload.
    make: async () =>
      cephStore(undefined, { multipartThresholdBytes: 8 * 2 ** 20, partSizeBytes: 5 * 2 ** 20 }),
  },
];
