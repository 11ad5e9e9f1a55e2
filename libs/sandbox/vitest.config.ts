import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["@troupe/source"] },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // CPU-limit tests need a few CPU-seconds, which take longer in wall time on a loaded machine.
    testTimeout: 60_000,
    hookTimeout: 30_000,
  },
});
