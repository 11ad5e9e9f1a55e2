/**
 * Whether the worker can run here: Debian's python3 with torch importable. The suites that need the
 * worker skip (with this message) only when it cannot; on CI and dev machines torch is installed by
 * tools/system-deps.sh and they run.
 */
import { spawnSync } from "node:child_process";

export const PYTHON = process.env.TROUPE_PYTHON ?? "/usr/bin/python3";

export const torchAvailable = spawnSync(PYTHON, ["-c", "import torch"], { stdio: "ignore" }).status === 0;

if (!torchAvailable) {
  console.warn(
    `engine-torch: SKIPPING the worker tests — '${PYTHON} -c "import torch"' fails (install python3-torch; see tools/system-deps.sh)`,
  );
}

/** Worker arguments for tests: CPU, one thread (the CI box has 2 cores shared by everyone). */
export const TEST_WORKER_ARGS = [
  "--device",
  "cpu",
  "--threads",
  "1",
  "--model-backend",
  "troupe",
  "--generator",
  "torch",
];

/** How the tests start the worker: `python` and `workerArgs` of `createTorchEngine` and `WorkerProcess.start`. */
export const TEST_WORKER = { python: PYTHON, workerArgs: TEST_WORKER_ARGS } as const;
