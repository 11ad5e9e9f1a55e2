/**
 * The ONNX serving backend on its own: its options, the cache of loaded engines (one load per
 * policy, least recently used dropped first, a failed load retried), and a call aborted while it
 * waits in the FIFO pool.
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
    expect(() => createOnnxBackend({ maxCachedPolicies: 1.5 })).toThrow(
      "createOnnxBackend: maxCachedPolicies must be a positive integer, got 1.5",
    );
  });

  it("loads each policy once, and beyond maxCachedPolicies drops the least recently used", async () => {
    const backend = createOnnxBackend({ maxCachedPolicies: 1 });
    const policies = await backend.policies(manifest, registry);
    // Loaded at policies(): planner, then fixer, which evicts planner.
    expect(backend.stats()).toMatchObject({ loads: 2, cached: ["tiny@1/fixer"] });
    await policies.fixer!.generate([request], sampling);
    expect(backend.stats()).toMatchObject({ loads: 2, cached: ["tiny@1/fixer"] });
    const [completion] = await policies.planner!.generate([request], sampling);
    expect(completion!.tokenIds.length).toBeGreaterThan(0);
    expect(backend.stats()).toMatchObject({ loads: 3, cached: ["tiny@1/planner"], active: 0, maxActive: 1 });
    await backend.close();
    expect(backend.stats().cached).toEqual([]);
  }, 60_000);

  it("keeps the loaded engines in least-recently-used order and retries a failed load", async () => {
    const backend = createOnnxBackend();
    let failures = 1;
    const flaky: TeamRegistry = {
      ...registry,
      readPolicyFiles: async (m, policyId) => {
        if (failures-- > 0) throw new Error("store unavailable");
        return registry.readPolicyFiles(m, policyId);
      },
    };
    await expect(backend.policies(manifest, flaky)).rejects.toThrow("store unavailable");
    const policies = await backend.policies(manifest, flaky);
    expect(backend.stats().cached).toEqual(["tiny@1/planner", "tiny@1/fixer"]);
    await policies.planner!.generate([request], sampling);
    expect(backend.stats()).toMatchObject({ loads: 3, cached: ["tiny@1/fixer", "tiny@1/planner"] });
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
