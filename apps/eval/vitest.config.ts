import { defineConfig, mergeConfig } from "vitest/config";
import { sharedConfig } from "../../vitest.shared.ts";

export default mergeConfig(
  sharedConfig,
  defineConfig({
    test: {
      // The S3 end-to-end test runs against a real S3 server: Ceph's RADOS gateway on 127.0.0.1,
      // started (or reused) by the storage library's globalSetup; tests get it with inject("s3").
      globalSetup: ["../../libs/storage/test/ceph-setup.ts"],
      hookTimeout: 120_000,
    },
  }),
);
