import { defineConfig } from "vitest/config";

// As vitest.shared.ts, but without the "module" condition: with it, the AWS SDK resolves to its
// bundler-only ESM build (extension-less imports) and fails to load under Node.
const conditions = ["@troupe/source", "node", "import", "default"];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // A real S3 server (Ceph RGW on 127.0.0.1) for the whole suite; see test/ceph-setup.ts.
    globalSetup: ["test/ceph-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
