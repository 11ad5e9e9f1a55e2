/**
 * `@troupe/teams/onnx`: the embedded CPU backend (onnxruntime-node, so Node only — the main entry
 * of @troupe/teams never imports this file).
 *
 * Each published policy becomes an `OnnxEngine` built from its files (config.json,
 * model.safetensors, tokenizer) when its team version is loaded (`policies`), and is closed when
 * that version is unloaded (`unload`). Which versions stay loaded is not decided here: a server
 * keeps one cache of loaded teams (the API's `TeamCache`), and the engines live exactly as long as
 * their team does there.
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
  /**
   * Count ONNX Runtime's CPU time (`ortCpuMs` in stats; @troupe/engine-onnx `meterOrtCpu`, Node
   * only). Default false.
   */
  readonly meterCpu?: boolean;
}

export const DEFAULT_MAX_CONCURRENT = 1;

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
  readonly loaded: string[];
  /** Engines built so far (a policy already loaded builds none). */
  readonly loads: number;
  /** ONNX Runtime's session runs and their CPU time in this process (zeros unless `meterCpu`). */
  readonly ortRuns: number;
  readonly ortCpuMs: number;
}

export interface OnnxBackend extends InferenceBackend {
  readonly name: "onnx";
  unload(manifest: TeamManifest): Promise<void>;
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
}

/** The options with their defaults; throws naming one that is not a positive integer. */
function backendSettings(options: OnnxBackendOptions): BackendSettings {
  const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new Error(`createOnnxBackend: maxConcurrent must be a positive integer, got ${maxConcurrent}`);
  }
  return {
    batching: options.batching ?? false,
    continuousBatching: { maxBatch: options.maxBatch, maxQueued: options.maxQueued },
    maxConcurrent,
  };
}

/**
 * The engines of the loaded team versions, by policy key, each with the number of `policies()`
 * calls holding it. There is no eviction here: what stays loaded is decided by the one cache of
 * loaded teams above the backend (the API's `TeamCache`), which unloads a version it drops once no
 * request is using it; an engine closes when its last holder unloads it. A failed load is
 * forgotten, so the next `policies()` call retries it.
 */
class LoadedEngines {
  private readonly engines = new Map<string, { engine: Promise<OnnxEngine>; holders: number }>();
  /** Engines built so far (a policy already loaded builds none). */
  loads = 0;

  /** The engine of `key`, loaded by `load` unless it is loaded (or loading) already; held once more. */
  hold(key: string, load: () => Promise<OnnxEngine>): Promise<OnnxEngine> {
    const loaded = this.engines.get(key);
    if (loaded !== undefined) {
      loaded.holders++;
      return loaded.engine;
    }
    this.loads++;
    const entry = { engine: load(), holders: 1 };
    entry.engine.catch(() => {
      if (this.engines.get(key) === entry) this.engines.delete(key); // retried next time
    });
    this.engines.set(key, entry);
    return entry.engine;
  }

  /** The loaded engine of `key`; an unloaded one is a caller's mistake, named. */
  get(key: string): Promise<OnnxEngine> {
    const entry = this.engines.get(key);
    if (entry === undefined) throw new Error(`policy ${key} is not loaded: its team was unloaded`);
    return entry.engine;
  }

  keys(): string[] {
    return [...this.engines.keys()];
  }

  /** One holder less for each key; an engine nobody holds any more is closed. */
  async release(keys: readonly string[]): Promise<void> {
    const unheld: Promise<OnnxEngine>[] = [];
    for (const key of keys) {
      const entry = this.engines.get(key);
      if (entry === undefined || --entry.holders > 0) continue;
      this.engines.delete(key);
      unheld.push(entry.engine);
    }
    await Promise.all(unheld.map(closeEngine));
  }

  async close(): Promise<void> {
    const engines = [...this.engines.values()].map((entry) => entry.engine);
    this.engines.clear();
    await Promise.all(engines.map(closeEngine));
  }
}

async function closeEngine(engine: Promise<OnnxEngine>): Promise<void> {
  await (await engine.catch(() => undefined))?.close();
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
  readonly engines: LoadedEngines;
  readonly calls: CallCounter;
  /** Without batching: the FIFO pool every call waits in. */
  readonly pool: LimitFunction;
}

/** The key of one policy of a team version among the loaded engines. */
function policyKey(manifest: TeamManifest, policyId: string): string {
  return `${manifest.name}@${manifest.version}/${policyId}`;
}

/** Builds the policy's engine from its published files (checksums verified by the registry). */
async function loadEngine(
  state: ServingState,
  manifest: TeamManifest,
  registry: TeamRegistry,
  policyId: string,
): Promise<OnnxEngine> {
  const files = await registry.readPolicyFiles(manifest, policyId); // checksums verified
  delete files[ONNX_GRAPH_FILE]; // the engine builds its own graphs from config.json
  return createOnnxEngine({
    policies: [{ id: policyId, checkpoint: files }],
    continuousBatching: state.settings.continuousBatching,
  });
}

/** One `generate` of a served policy: its requests, their sampling and the caller's signal. */
interface PolicyCall {
  readonly policyId: string;
  /** The policy's engine among the loaded ones (`policyKey`). */
  readonly key: string;
  readonly requests: readonly GenerationRequest[];
  readonly sampling: SamplingParams;
  readonly options: GenerateCallOptions;
}

/** Each request joins the policy's running batch; the engine queues and bounds them. */
async function generateBatched(state: ServingState, c: PolicyCall): Promise<Completion[]> {
  state.calls.enter(c.requests.length);
  try {
    const engine = await state.engines.get(c.key);
    return await Promise.all(
      c.requests.map((r) =>
        engine.generateContinuous(
          { policyId: c.policyId, observation: r.observation, seed: r.seed },
          c.sampling,
          c.options,
        ),
      ),
    );
  } catch (error) {
    if (error instanceof GenerationQueueFullError) throw new BackendOverloadedError(error.message);
    throw error;
  } finally {
    state.calls.leave(c.requests.length);
  }
}

/** One batch of requests generated together, once the FIFO pool gives this call its slot. */
async function generateUnbatched(state: ServingState, c: PolicyCall): Promise<Completion[]> {
  c.options.signal?.throwIfAborted(); // aborted while queued: give the slot to the next caller
  state.calls.enter(1);
  try {
    const engine = await state.engines.get(c.key);
    return await engine.generate(
      c.requests.map((r) => ({ policyId: c.policyId, observation: r.observation, seed: r.seed })),
      c.sampling,
    );
  } finally {
    state.calls.leave(1);
  }
}

function servingPolicy(state: ServingState, manifest: TeamManifest, policyId: string): ServingPolicy {
  const key = policyKey(manifest, policyId);
  return {
    id: policyId,
    version: manifest.version,
    generate(requests, sampling, options = {}) {
      const c: PolicyCall = { policyId, key, requests, sampling, options };
      return state.settings.batching
        ? generateBatched(state, c)
        : state.pool(() => generateUnbatched(state, c));
    },
  };
}

/**
 * The manifest's policies, each loaded (and validated) now, one after the other: a broken team
 * fails here, not mid-episode. A version already loaded is not loaded again, only held once more:
 * each call is matched by one `unload`.
 */
async function servingPolicies(
  state: ServingState,
  manifest: TeamManifest,
  registry: TeamRegistry,
): Promise<ServingPolicySet> {
  const set: Record<string, ServingPolicy> = {};
  const held: string[] = [];
  try {
    for (const policyId of Object.keys(manifest.policies)) {
      const key = policyKey(manifest, policyId);
      await state.engines.hold(key, () => loadEngine(state, manifest, registry, policyId));
      held.push(key);
      set[policyId] = servingPolicy(state, manifest, policyId);
    }
  } catch (error) {
    await state.engines.release(held); // a team loads whole or not at all
    throw error;
  }
  return set;
}

function backendStats(state: ServingState): OnnxBackendStats {
  return {
    active: state.calls.active,
    pending: state.pool.pendingCount,
    maxActive: state.calls.maxActive,
    loaded: state.engines.keys(),
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
    engines: new LoadedEngines(),
    calls: new CallCounter(),
    pool: pLimit(settings.maxConcurrent),
  };
  return {
    name: "onnx",
    policies: (manifest, registry) => servingPolicies(state, manifest, registry),
    unload: (manifest) =>
      state.engines.release(Object.keys(manifest.policies).map((id) => policyKey(manifest, id))),
    stats: () => backendStats(state),
    async close(): Promise<void> {
      state.pool.clearQueue();
      await state.engines.close();
    },
  };
}
