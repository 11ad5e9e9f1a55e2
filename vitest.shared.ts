/**
 * Vitest settings every project shares. Workspace packages export their TypeScript sources under
 * the "@troupe/source" condition; vitest (server-side resolution) must ask for it explicitly,
 * keeping the default conditions after it.
 */
import { defineConfig } from "vitest/config";

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
