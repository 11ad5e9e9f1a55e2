/**
 * The ONNX serving backend on its own: its options, the engines it holds (one load per policy of a
 * version, closed at the last unload, a team loaded whole or not at all, a failed load retried),
 * and a call aborted while it waits in the FIFO pool.
 */
import { samplingParams, userObservation } from "@troupe/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTeamRegistry, type TeamManifest, type TeamRegistry } from "../src/index.ts";
import { createOnnxBackend } from "../src/onnx-backend.ts";
import { tempStore, tinyTeamInput } from "./fixtures.ts";

const tmp = tempStore();
let registry: TeamRegistry;
let manifest: TeamManifest;
const sampling = samplingParams({ maxTokens: 3 });
const request = { observation: userObservation("go"), seed: 1 };

beforeAll(async () => {
  registry = createTeamRegistry(tmp.store);
  manifest = await registry.publish(await tinyTeamInput("tiny"));
}, 60_000);

afterAll(() => tmp.cleanup());

describe("createOnnxBackend", () => {
  it("names an option that is not a positive integer", () => {
    expect(() => createOnnxBackend({ maxConcurrent: 0 })).toThrow(
      "createOnnxBackend: maxConcurrent must be a positive integer, got 0",
    );
    expect(() => createOnnxBackend({ maxConcurrent: 1.5 })).toThrow(
      "createOnnxBackend: maxConcurrent must be a positive integer, got 1.5",
    );
  });

  it("loads a version's policies once, holds them per policies() call, and closes them at the last unload", async () => {
    const backend = createOnnxBackend();
    const policies = await backend.policies(manifest, registry);
    expect(backend.stats()).toMatchObject({ loads: 2, loaded: ["tiny@1/planner", "tiny@1/fixer"] });
    const again = await backend.policies(manifest, registry); // a second holder: nothing built
    expect(backend.stats()).toMatchObject({ loads: 2, loaded: ["tiny@1/planner", "tiny@1/fixer"] });
    await backend.unload(manifest);
    const [completion] = await again.planner!.generate([request], sampling); // still held once
    expect(completion!.tokenIds.length).toBeGreaterThan(0);
    await backend.unload(manifest);
    expect(backend.stats().loaded).toEqual([]);
    await expect(policies.fixer!.generate([request], sampling)).rejects.toThrow(
      "policy tiny@1/fixer is not loaded: its team was unloaded",
    );
    await backend.policies(manifest, registry); // loaded afresh
    expect(backend.stats()).toMatchObject({ loads: 4, loaded: ["tiny@1/planner", "tiny@1/fixer"] });
    await backend.close();
    expect(backend.stats().loaded).toEqual([]);
  }, 60_000);

  it("loads a team whole or not at all, and retries a failed load", async () => {
    const backend = createOnnxBackend();
    let failures = 1;
    const fixerFlaky: TeamRegistry = {
      ...registry,
      readPolicyFiles: async (m, policyId) => {
        if (policyId === "fixer" && failures-- > 0) throw new Error("store unavailable");
        return registry.readPolicyFiles(m, policyId);
      },
    };
    await expect(backend.policies(manifest, fixerFlaky)).rejects.toThrow("store unavailable");
    expect(backend.stats()).toMatchObject({ loads: 2, loaded: [] }); // planner let go again
    const policies = await backend.policies(manifest, fixerFlaky);
    expect(backend.stats()).toMatchObject({ loads: 4, loaded: ["tiny@1/planner", "tiny@1/fixer"] });
    await policies.planner!.generate([request], sampling);
    expect(backend.stats()).toMatchObject({ active: 0, maxActive: 1 });
    await backend.close();
  }, 60_000);

  it("a call aborted while it waits for the pool fails without generating", async () => {
    const backend = createOnnxBackend({ maxConcurrent: 1 });
    const policies = await backend.policies(manifest, registry);
    const running = policies.planner!.generate([request], sampling);
    const abort = new AbortController();
    const waiting = policies.fixer!.generate([request], sampling, { signal: abort.signal });
    expect(backend.stats().pending).toBe(1);
    abort.abort();
    await expect(waiting).rejects.toThrow();
    await running;
    expect(backend.stats()).toMatchObject({ active: 0, pending: 0, maxActive: 1 });
    await backend.close();
  }, 60_000);
});
