/**
 * Vitest settings every project shares. Workspace packages export their TypeScript sources under
 * the "@troupe/source" condition; vitest (server-side resolution) must ask for it explicitly,
 * keeping the default conditions after it.
 */
import { fileURLToPath } from "node:url";
import { defineConfig, mergeConfig } from "vitest/config";

// No "module" condition: with it some packages (the AWS SDK) resolve to bundler-only builds that fail under Node.
const conditions = ["@troupe/source", "node", "import", "default"];

export const sharedConfig = defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // Vitest's 5 s default fails tests that take 2 s on a quiet machine once two suites, a second
    // checkout or a training job share its 2 cores. A timeout here only catches a hang; the
    // tests' own expectations never depend on wall time.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

/**
 * As sharedConfig, for suites with an S3 end-to-end test: it runs against a real S3 server, Ceph's
 * RADOS gateway on 127.0.0.1, started (or reused) by the storage library's globalSetup; tests get it
 * with inject("s3").
 */
export const s3Config = mergeConfig(
  sharedConfig,
  defineConfig({
    test: {
      globalSetup: [fileURLToPath(new URL("./libs/storage/test/ceph-setup.ts", import.meta.url))],
      hookTimeout: 120_000,
    },
  }),
);
