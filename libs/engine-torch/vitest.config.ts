import { fileURLToPath } from "node:url";
import { defineConfig, mergeConfig } from "vitest/config";
import { sharedConfig } from "../../vitest.shared.ts";

export default mergeConfig(
  sharedConfig,
  defineConfig({
    test: {
      // The tests start real workers: the troupe_worker package of this repository (an app the
      // library's source never names; see DEFAULT_WORKER_DIR).
      env: {
        TROUPE_TORCH_WORKER_DIR: fileURLToPath(new URL("../../apps/engine-torch", import.meta.url)),
      },
    },
  }),
);
