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
import pLimit, { type LimitFunction } from "p-limit";
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

/** What `createOnnxBackend` runs with, its options checked. */
interface BackendSettings {
  readonly batching: boolean;
  readonly continuousBatching: {
    readonly maxBatch?: number | undefined;
    readonly maxQueued?: number | undefined;
  };
  readonly maxConcurrent: number;
  readonly maxCachedPolicies: number;
}

/** The options with their defaults; throws naming the first that is not a positive integer. */
function backendSettings(options: OnnxBackendOptions): BackendSettings {
  const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  const maxCachedPolicies = options.maxCachedPolicies ?? DEFAULT_MAX_CACHED_POLICIES;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new Error(`createOnnxBackend: maxConcurrent must be a positive integer, got ${maxConcurrent}`);
  }
  if (!Number.isInteger(maxCachedPolicies) || maxCachedPolicies < 1) {
    throw new Error(
      `createOnnxBackend: maxCachedPolicies must be a positive integer, got ${maxCachedPolicies}`,
    );
  }
  return {
    batching: options.batching ?? false,
    continuousBatching: { maxBatch: options.maxBatch, maxQueued: options.maxQueued },
    maxConcurrent,
    maxCachedPolicies,
  };
}

interface CacheEntry {
  readonly engine: Promise<OnnxEngine>;
  /** Calls using the engine now: an evicted entry is closed when the last one leaves. */
  users: number;
  evicted: boolean;
}

async function closeEntry(entry: CacheEntry): Promise<void> {
  const engine = await entry.engine.catch(() => undefined);
  await engine?.close();
}

/**
 * The loaded engines by policy key, least recently used first (Map order). Beyond `maxEntries`
 * the oldest are dropped, and closed once no call is using them; a failed load is dropped too, so
 * the next call retries it.
 */
class EngineCache {
  private readonly entries = new Map<string, CacheEntry>();
  /** Engines built so far (a cache hit builds none). */
  loads = 0;

  constructor(private readonly maxEntries: number) {}

  /** The entry of `key` (loaded by `load` if absent), counted as used until `release`. */
  acquire(key: string, load: () => Promise<OnnxEngine>): CacheEntry {
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = this.load(key, load);
      this.evictBeyondBound(entry);
    } else {
      this.entries.delete(key); // refresh its place in the LRU order
      this.entries.set(key, entry);
    }
    entry.users++;
    return entry;
  }

  release(entry: CacheEntry): void {
    entry.users--;
    if (entry.evicted && entry.users === 0) void closeEntry(entry);
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** Drops every entry; those in use close when their last call leaves. */
  async close(): Promise<void> {
    const entries = [...this.entries.values()];
    this.entries.clear();
    for (const entry of entries) {
      entry.evicted = true;
      if (entry.users === 0) await closeEntry(entry);
    }
  }

  private load(key: string, load: () => Promise<OnnxEngine>): CacheEntry {
    this.loads++;
    const engine = load();
    const entry: CacheEntry = { engine, users: 0, evicted: false };
    engine.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key); // a failed load is retried next time
    });
    this.entries.set(key, entry);
    return entry;
  }

  /** Drops the oldest entries other than `keep` while the cache holds more than its bound. */
  private evictBeyondBound(keep: CacheEntry): void {
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries) break;
      if (entry === keep) continue;
      this.entries.delete(key);
      entry.evicted = true;
      if (entry.users === 0) void closeEntry(entry);
    }
  }
}

/** Generation calls in flight, and the most ever at once. */
class CallCounter {
  active = 0;
  maxActive = 0;

  enter(calls: number): void {
    this.active += calls;
    this.maxActive = Math.max(this.maxActive, this.active);
  }

  leave(calls: number): void {
    this.active -= calls;
  }
}

/** The state one backend's policies share. */
interface ServingState {
  readonly settings: BackendSettings;
  readonly engines: EngineCache;
  readonly calls: CallCounter;
  /** Without batching: the FIFO pool every call waits in. */
  readonly pool: LimitFunction;
}

/** The engine cache's key of one policy of a team version. */
function policyKey(manifest: TeamManifest, policyId: string): string {
  return `${manifest.name}@${manifest.version}/${policyId}`;
}

/** Builds the policy's engine from its published files (checksums verified by the registry). */
function engineLoader(
  state: ServingState,
  manifest: TeamManifest,
  registry: TeamRegistry,
  policyId: string,
): () => Promise<OnnxEngine> {
  return async () => {
    const files = await registry.readPolicyFiles(manifest, policyId); // checksums verified
    delete files[ONNX_GRAPH_FILE]; // the engine builds its own graphs from config.json
    return createOnnxEngine({
      policies: [{ id: policyId, checkpoint: files }],
      continuousBatching: state.settings.continuousBatching,
    });
  };
}

/** One policy's engine, as the solve loop calls it. */
interface PolicyHandle {
  readonly policyId: string;
  readonly key: string;
  readonly load: () => Promise<OnnxEngine>;
}

/** Each request joins the policy's running batch; the engine queues and bounds them. */
async function generateBatched(
  state: ServingState,
  policy: PolicyHandle,
  requests: readonly GenerationRequest[],
  sampling: SamplingParams,
  call: GenerateCallOptions,
): Promise<Completion[]> {
  const entry = state.engines.acquire(policy.key, policy.load);
  state.calls.enter(requests.length);
  try {
    const engine = await entry.engine;
    return await Promise.all(
      requests.map((r) =>
        engine.generateContinuous(
          { policyId: policy.policyId, observation: r.observation, seed: r.seed },
          sampling,
          call,
        ),
      ),
    );
  } catch (error) {
    if (error instanceof GenerationQueueFullError) throw new BackendOverloadedError(error.message);
    throw error;
  } finally {
    state.calls.leave(requests.length);
    state.engines.release(entry);
  }
}

/** One batch of requests generated together, once the FIFO pool gives this call its slot. */
async function generateUnbatched(
  state: ServingState,
  policy: PolicyHandle,
  requests: readonly GenerationRequest[],
  sampling: SamplingParams,
  call: GenerateCallOptions,
): Promise<Completion[]> {
  call.signal?.throwIfAborted(); // aborted while queued: give the slot to the next caller
  const entry = state.engines.acquire(policy.key, policy.load);
  state.calls.enter(1);
  try {
    const engine = await entry.engine;
    return await engine.generate(
      requests.map((r) => ({ policyId: policy.policyId, observation: r.observation, seed: r.seed })),
      sampling,
    );
  } finally {
    state.calls.leave(1);
    state.engines.release(entry);
  }
}

function servingPolicy(
  state: ServingState,
  manifest: TeamManifest,
  registry: TeamRegistry,
  policyId: string,
): ServingPolicy {
  const policy: PolicyHandle = {
    policyId,
    key: policyKey(manifest, policyId),
    load: engineLoader(state, manifest, registry, policyId),
  };
  return {
    id: policyId,
    version: manifest.version,
    generate(requests, sampling, call = {}) {
      return state.settings.batching
        ? generateBatched(state, policy, requests, sampling, call)
        : state.pool(() => generateUnbatched(state, policy, requests, sampling, call));
    },
  };
}

/** The manifest's policies, each loaded (and validated) now: a broken team fails here, not mid-episode. */
async function servingPolicies(
  state: ServingState,
  manifest: TeamManifest,
  registry: TeamRegistry,
): Promise<ServingPolicySet> {
  const set: Record<string, ServingPolicy> = {};
  for (const policyId of Object.keys(manifest.policies)) {
    set[policyId] = servingPolicy(state, manifest, registry, policyId);
  }
  for (const policyId of Object.keys(manifest.policies)) {
    const load = engineLoader(state, manifest, registry, policyId);
    const entry = state.engines.acquire(policyKey(manifest, policyId), load);
    try {
      await entry.engine;
    } finally {
      state.engines.release(entry);
    }
  }
  return set;
}

function backendStats(state: ServingState): OnnxBackendStats {
  return {
    active: state.calls.active,
    pending: state.pool.pendingCount,
    maxActive: state.calls.maxActive,
    cached: state.engines.keys(),
    loads: state.engines.loads,
    ortRuns: ortCpuUsage().runs,
    ortCpuMs: ortCpuUsage().cpuMs,
  };
}

export function createOnnxBackend(options: OnnxBackendOptions = {}): OnnxBackend {
  const settings = backendSettings(options);
  if (options.meterCpu) meterOrtCpu();
  const state: ServingState = {
    settings,
    engines: new EngineCache(settings.maxCachedPolicies),
    calls: new CallCounter(),
    pool: pLimit(settings.maxConcurrent),
  };
  return {
    name: "onnx",
    policies: (manifest, registry) => servingPolicies(state, manifest, registry),
    stats: () => backendStats(state),
    async close(): Promise<void> {
      state.pool.clearQueue();
      await state.engines.close();
    },
  };
}
