/**
 * `@troupe/teams/onnx`: the embedded CPU backend (onnxruntime-node, so Node only — the main entry
 * of @troupe/teams never imports this file).
 *
 * Each published policy becomes an `OnnxEngine` built from its files (config.json,
 * model.safetensors, tokenizer), cached per (team, version, policy); the least recently used is
 * dropped beyond `maxCachedPolicies`, once no generation is using it.
 *
 * One generation call = one turn of one request. With `batching` (the Node server's default) every turn joins
 * its policy's continuous batch (`OnnxEngine.generateContinuous`): concurrent requests share each
 * decode step, and a turn waits for one step of the others, not for their whole generations. Past
 * `maxQueued` waiting turns of a policy a call fails with `BackendOverloadedError` (503).
 * Without batching, calls from every request go through one FIFO pool of `maxConcurrent` slots
 * (p-limit's queue is first-in first-out): ONNX Runtime already uses every core for a single
 * batch (intra-op threads), so running more at once only makes them contend.
 */
import type { Completion, GenerationRequest, SamplingParams } from "@troupe/core";
import {
  createOnnxEngine,
  GenerationQueueFullError,
  meterOrtCpu,
  type OnnxEngine,
  ortCpuUsage,
} from "@troupe/engine-onnx";
import pLimit from "p-limit";
import {
  BackendOverloadedError,
  type GenerateCallOptions,
  type InferenceBackend,
  type ServingPolicy,
  type ServingPolicySet,
} from "./backend.ts";
import type { TeamManifest } from "./manifest.ts";
import { ONNX_GRAPH_FILE } from "./onnx-export.ts";
import type { TeamRegistry } from "./registry.ts";

export * from "./onnx-export.ts";

export interface OnnxBackendOptions {
  /**
   * Continuous batching of concurrent turns per policy; false (the default): the FIFO pool. The
   * Node server turns it on (`--batching`); the Worker's one-threaded wasm build keeps the pool.
   */
  readonly batching?: boolean;
  /** With batching: turns decoded together per policy, and turns waiting per policy at most. */
  readonly maxBatch?: number;
  readonly maxQueued?: number;
  /** Without batching: calls running at once, all teams together. 1: ORT's threads already fill the cores. */
  readonly maxConcurrent?: number;
  /** Policies kept loaded (engines with their ORT sessions); the least recently used goes first. */
  readonly maxCachedPolicies?: number;
  /**
   * Count ONNX Runtime's CPU time (`ortCpuMs` in stats; @troupe/engine-onnx `meterOrtCpu`, Node
   * only). Default false.
   */
  readonly meterCpu?: boolean;
}

export const DEFAULT_MAX_CONCURRENT = 1;
export const DEFAULT_MAX_CACHED_POLICIES = 16;

export interface OnnxBackendStats {
  /**
   * Generation calls in flight (with batching: queued in or decoding with their policy's batch) /
   * waiting for a slot of the FIFO pool (always 0 with batching).
   */
  readonly active: number;
  readonly pending: number;
  /** Most calls ever running at once (without batching, never above maxConcurrent). */
  readonly maxActive: number;
  /** Loaded policies, as `name@version/policy`. */
  readonly cached: string[];
  /** Engines built so far (a cache hit builds none). */
  readonly loads: number;
  /** ONNX Runtime's session runs and their CPU time in this process (zeros unless `meterCpu`). */
  readonly ortRuns: number;
  readonly ortCpuMs: number;
}

export interface OnnxBackend extends InferenceBackend {
  readonly name: "onnx";
  stats(): OnnxBackendStats;
  close(): Promise<void>;
}

interface CacheEntry {
  readonly engine: Promise<OnnxEngine>;
  users: number;
  evicted: boolean;
}

export function createOnnxBackend(options: OnnxBackendOptions = {}): OnnxBackend {
  const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  const maxCached = options.maxCachedPolicies ?? DEFAULT_MAX_CACHED_POLICIES;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new Error(`createOnnxBackend: maxConcurrent must be a positive integer, got ${maxConcurrent}`);
  }
  if (!Number.isInteger(maxCached) || maxCached < 1) {
    throw new Error(`createOnnxBackend: maxCachedPolicies must be a positive integer, got ${maxCached}`);
  }
  if (options.meterCpu) meterOrtCpu();
  const batching = options.batching ?? false;
  const continuousBatching = { maxBatch: options.maxBatch, maxQueued: options.maxQueued };
  const pool = pLimit(maxConcurrent);
  const cache = new Map<string, CacheEntry>();
  let active = 0;
  let maxActive = 0;
  let loads = 0;

  const closeEntry = async (entry: CacheEntry) => {
    const engine = await entry.engine.catch(() => undefined);
    await engine?.close();
  };

  function acquire(key: string, load: () => Promise<OnnxEngine>): CacheEntry {
    let entry = cache.get(key);
    if (entry === undefined) {
      loads++;
      const engine = load();
      entry = { engine, users: 0, evicted: false };
      const created = entry;
      engine.catch(() => {
        if (cache.get(key) === created) cache.delete(key); // a failed load is retried next time
      });
      cache.set(key, entry);
      // Least recently used first in Map order: drop the oldest idle entries beyond the bound.
      for (const [k, e] of cache) {
        if (cache.size <= maxCached) break;
        if (e === entry) continue;
        cache.delete(k);
        e.evicted = true;
        if (e.users === 0) void closeEntry(e);
      }
    } else {
      cache.delete(key); // refresh its place in the LRU order
      cache.set(key, entry);
    }
    entry.users++;
    return entry;
  }

  function release(entry: CacheEntry): void {
    entry.users--;
    if (entry.evicted && entry.users === 0) void closeEntry(entry);
  }

  const keyOf = (manifest: TeamManifest, policyId: string) =>
    `${manifest.name}@${manifest.version}/${policyId}`;
  const loader = (manifest: TeamManifest, registry: TeamRegistry, policyId: string) => async () => {
    const files = await registry.readPolicyFiles(manifest, policyId); // checksums verified
    delete files[ONNX_GRAPH_FILE]; // the engine builds its own graphs from config.json
    return createOnnxEngine({ policies: [{ id: policyId, checkpoint: files }], continuousBatching });
  };

  function servingPolicy(manifest: TeamManifest, registry: TeamRegistry, policyId: string): ServingPolicy {
    const key = keyOf(manifest, policyId);
    const load = loader(manifest, registry, policyId);
    return {
      id: policyId,
      version: manifest.version,
      generate(
        requests: readonly GenerationRequest[],
        sampling: SamplingParams,
        call: GenerateCallOptions = {},
      ): Promise<Completion[]> {
        return batching ? batched(requests, sampling, call) : pool(() => unbatched(requests, sampling, call));
      },
    };

    /** Each request joins the policy's running batch; the engine queues and bounds them. */
    async function batched(
      requests: readonly GenerationRequest[],
      sampling: SamplingParams,
      call: GenerateCallOptions,
    ): Promise<Completion[]> {
      const entry = acquire(key, load);
      active += requests.length;
      maxActive = Math.max(maxActive, active);
      try {
        const engine = await entry.engine;
        return await Promise.all(
          requests.map((r) =>
            engine.generateContinuous({ policyId, observation: r.observation, seed: r.seed }, sampling, call),
          ),
        );
      } catch (error) {
        if (error instanceof GenerationQueueFullError) throw new BackendOverloadedError(error.message);
        throw error;
      } finally {
        active -= requests.length;
        release(entry);
      }
    }

    async function unbatched(
      requests: readonly GenerationRequest[],
      sampling: SamplingParams,
      call: GenerateCallOptions,
    ): Promise<Completion[]> {
      call.signal?.throwIfAborted(); // aborted while queued: give the slot to the next caller
      const entry = acquire(key, load);
      active++;
      maxActive = Math.max(maxActive, active);
      try {
        const engine = await entry.engine;
        return await engine.generate(
          requests.map((r) => ({ policyId, observation: r.observation, seed: r.seed })),
          sampling,
        );
      } finally {
        active--;
        release(entry);
      }
    }
  }

  return {
    name: "onnx",
    async policies(manifest: TeamManifest, registry: TeamRegistry): Promise<ServingPolicySet> {
      const set: Record<string, ServingPolicy> = {};
      for (const policyId of Object.keys(manifest.policies)) {
        set[policyId] = servingPolicy(manifest, registry, policyId);
      }
      // Load (and validate) every policy now, so a broken team fails at load time, not mid-episode.
      for (const policyId of Object.keys(manifest.policies)) {
        const entry = acquire(keyOf(manifest, policyId), loader(manifest, registry, policyId));
        try {
          await entry.engine;
        } finally {
          release(entry);
        }
      }
      return set;
    },
    stats: () => ({
      active,
      pending: pool.pendingCount,
      maxActive,
      cached: [...cache.keys()],
      loads,
      ortRuns: ortCpuUsage().runs,
      ortCpuMs: ortCpuUsage().cpuMs,
    }),
    async close(): Promise<void> {
      pool.clearQueue();
      const entries = [...cache.values()];
      cache.clear();
      for (const entry of entries) {
        entry.evicted = true;
        if (entry.users === 0) await closeEntry(entry);
      }
    },
  };
}
