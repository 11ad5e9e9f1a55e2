/** One worker engine shared by the tests of a suite. */
import { afterAll, beforeAll } from "vitest";
import { createTorchEngine, type TorchEngine, type TorchEngineOptions } from "../src/engine.ts";
import { TEST_WORKER } from "./torch-available.ts";

/**
 * Starts a worker engine (the test worker: CPU, one thread) with these models and policies before
 * the suite's tests and closes it after them; the tests reach it as `.engine`.
 */
export function suiteWorkerEngine(options: Omit<TorchEngineOptions, keyof typeof TEST_WORKER>): {
  readonly engine: TorchEngine;
} {
  let engine: TorchEngine | undefined;
  // 60 s: the worker imports torch, slow on a loaded machine.
  beforeAll(async () => {
    engine = await createTorchEngine({ ...TEST_WORKER, ...options });
  }, 60_000);
  afterAll(async () => {
    await engine?.close();
  });
  return {
    get engine() {
      if (engine === undefined) throw new Error("the suite's worker engine did not start");
      return engine;
    },
  };
}
