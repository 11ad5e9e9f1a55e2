/**
 * Vitest settings every project shares. Workspace packages export their TypeScript sources under
 * the "@troupe/source" condition; vitest (server-side resolution) must ask for it explicitly,
 * keeping the default conditions after it.
 */
import { defineConfig } from "vitest/config";

const conditions = ["@troupe/source", "module", "node", "import", "default"];

export const sharedConfig = defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: { include: ["src/**/*.test.ts", "test/**/*.test.ts"] },
});
