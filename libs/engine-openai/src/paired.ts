/**
 * A paired engine: rollouts on OpenAI-compatible servers (vLLM, SGLang; one or several base URLs),
 * everything else — encode, log-probs, train steps, save/load — on a learner engine (the torch
 * worker on GPUs, any Engine in tests).
 *
 * Weight sync. Every change of a policy's weights on the learner (a train step or a load) is an
 * *update*; after one, the engine writes the new weights into a folder the servers can read
 * (`writeWeights`, given by the caller: the learner knows how) and sends them to every server:
 * - `lora`: POST /v1/load_lora_adapter `{"lora_name": "<policy>-v<version>", "lora_path": folder}`,
 *   then the policy's requests use `model: "<policy>-v<version>"`; the adapter it replaces is
 *   unloaded (once its requests in flight are done) and its folder released;
 * - `full`: POST `reloadPath` `{"model_path": folder}` (SGLang: /update_weights_from_disk), the
 *   served model name stays.
 * `<version>` is the learner's optimizer step count after the update, so a name says which weights
 * it holds across restarts. A push starts when a generate finds the servers behind the learner —
 * not at the update itself: a learner that never generates (a KL reference engine, a warm start's
 * many steps) then sends nothing, and several updates in a row (PPO epochs) are sent once. Updates
 * made while a push is in flight are sent by one more push of the newest weights.
 *
 * Staleness. A server may serve a generate request only while its weights lag the learner's by at
 * most `maxStaleness` updates (0, the default: exactly the learner's weights — what a caller that
 * tags samples with the learner's version needs); within the bound the request goes on with the
 * server's weights while the push runs, beyond it the request waits for the push. A push that
 * fails fails the generate waiting for it, in one line naming the server, the policy and the
 * version; the next generate tries again.
 *
 * Routing. Each generate request goes to the least-loaded eligible server (requests in flight
 * from this engine; ties round-robin).
 */
import type { Completion, Observation, PolicyId, SamplingParams } from "@troupe/core";
import type {
  CheckpointFiles,
  Engine,
  EngineGenerateRequest,
  PolicyInfo,
  TokenSequence,
  TrainMetrics,
  TrainSequence,
  TrainStepConfig,
} from "@troupe/engine";
import type { OpenAIEngine } from "./engine.ts";

export type WeightSync = "lora" | "full";

export interface PairedEngineOptions {
  readonly learner: Engine;
  /** One OpenAI engine per server, all serving the learner's policies. */
  readonly servers: readonly OpenAIEngine[];
  readonly weightSync: WeightSync;
  /**
   * Writes the learner's current weights of a policy into a folder the servers read (`lora`: the
   * adapter; `full`: the whole HF model), named after `name`, and returns its path as the servers
   * see it. It should issue its learner call before its first await, so that the folder holds the
   * weights of the update just made and not those of a later one.
   */
  readonly writeWeights: (policyId: PolicyId, name: string) => Promise<string>;
  /** Removes a folder no server serves any more. Default: keep it. */
  readonly releaseWeights?: (folder: string) => Promise<void>;
  /** `full`: the route every server reloads a model folder from, e.g. `/update_weights_from_disk`. */
  readonly reloadPath?: string;
  /** Updates a server's weights may lag the learner's for it to serve a request (default 0). */
  readonly maxStaleness?: number;
}

/** Where a policy's weights are on one server. */
export interface ServedWeights {
  readonly baseUrl: string;
  /** Learner updates included (undefined: nothing pushed yet). */
  readonly updates: number | undefined;
  /** The learner's optimizer step of those weights, and the name they are served under (`lora`). */
  readonly version: number | undefined;
  readonly name: string | undefined;
}

export interface SyncState {
  /** Updates the learner has made to the policy. */
  readonly updates: number;
  /** The learner's optimizer step count. */
  readonly version: number;
  readonly servers: readonly ServedWeights[];
}

export interface PairedEngine extends Engine {
  readonly learner: Engine;
  readonly servers: readonly OpenAIEngine[];
  /** The policy's weights on the learner and on each server. */
  syncState(policyId: PolicyId): SyncState;
  /** Waits until every server serves the learner's newest weights of every policy. */
  sync(): Promise<void>;
}

export function createPairedEngine(options: PairedEngineOptions): PairedEngine {
  if (options.servers.length === 0) throw new Error("createPairedEngine: servers is empty");
  if (options.weightSync === "full" && !options.reloadPath?.startsWith("/")) {
    throw new Error(
      'createPairedEngine: weightSync "full" needs reloadPath, a route such as /update_weights_from_disk',
    );
  }
  const maxStaleness = options.maxStaleness ?? 0;
  if (!Number.isInteger(maxStaleness) || maxStaleness < 0) {
    throw new Error(`createPairedEngine: maxStaleness = ${maxStaleness} must be a non-negative integer`);
  }
  return new PairedEngineImpl(options, maxStaleness);
}

interface Served {
  updates: number | undefined;
  version: number | undefined;
  name: string | undefined;
  folder: string | undefined;
}

interface PolicySync {
  updates: number;
  readonly served: Served[];
  /** The push in flight (never rejects; its failure is in `error`). */
  push: Promise<void> | undefined;
  error: Error | undefined;
}

class PairedEngineImpl implements PairedEngine {
  readonly kind: string;
  private readonly state = new Map<PolicyId, PolicySync>();
  /** Generate requests in flight per server, for least-loaded routing. */
  private readonly inFlight: number[];
  private turn = 0;

  constructor(
    private readonly options: PairedEngineOptions,
    private readonly maxStaleness: number,
  ) {
    this.kind = `${options.learner.kind}+openai`;
    this.inFlight = options.servers.map(() => 0);
  }

  get learner(): Engine {
    return this.options.learner;
  }

  get servers(): readonly OpenAIEngine[] {
    return this.options.servers;
  }

  policies(): readonly PolicyInfo[] {
    return this.options.learner.policies();
  }

  encode(policyId: PolicyId, observation: Observation, completion?: string): TokenSequence {
    return this.options.learner.encode(policyId, observation, completion);
  }

  logprobs(policyId: PolicyId, sequences: readonly TokenSequence[]): Promise<number[][]> {
    return this.options.learner.logprobs(policyId, sequences);
  }

  async trainStep(
    policyId: PolicyId,
    batch: readonly TrainSequence[],
    config: TrainStepConfig,
  ): Promise<TrainMetrics> {
    const metrics = await this.options.learner.trainStep(policyId, batch, config);
    this.updated(policyId);
    return metrics;
  }

  save(policyId: PolicyId): Promise<CheckpointFiles> {
    return this.options.learner.save(policyId);
  }

  async load(policyId: PolicyId, files: CheckpointFiles): Promise<void> {
    await this.options.learner.load(policyId, files);
    this.updated(policyId);
  }

  async generate(
    requests: readonly EngineGenerateRequest[],
    sampling: SamplingParams,
  ): Promise<Completion[]> {
    const policies = [...new Set(requests.map((r) => r.policyId))];
    const eligible = new Map<PolicyId, number[]>();
    for (const [i, servers] of (await Promise.all(policies.map((p) => this.ready(p)))).entries()) {
      eligible.set(policies[i]!, servers);
    }
    // Least-loaded routing, counting the requests of this batch as they are assigned.
    const groups = new Map<number, number[]>();
    requests.forEach((r, i) => {
      const candidates = eligible.get(r.policyId)!;
      let best = candidates[0]!;
      for (let k = 0; k < candidates.length; k++) {
        const s = candidates[(k + this.turn) % candidates.length]!;
        if (this.inFlight[s]! < this.inFlight[best]!) best = s;
      }
      this.turn++;
      this.inFlight[best]!++;
      groups.set(best, [...(groups.get(best) ?? []), i]);
    });
    const out: Completion[] = new Array(requests.length);
    await Promise.all(
      [...groups].map(async ([s, indices]) => {
        try {
          const completions = await this.options.servers[s]!.generate(
            indices.map((i) => requests[i]!),
            sampling,
          );
          indices.forEach((i, k) => {
            out[i] = completions[k]!;
          });
        } catch (error) {
          throw oneLine(
            `rollout server ${this.options.servers[s]!.baseUrl}`,
            error,
            this.options.servers[s]!.baseUrl,
          );
        } finally {
          this.inFlight[s]! -= indices.length;
        }
      }),
    );
    return out;
  }

  syncState(policyId: PolicyId): SyncState {
    const s = this.policyState(policyId);
    return {
      updates: s.updates,
      version: this.learnerVersion(policyId),
      servers: s.served.map((w, i) => ({
        baseUrl: this.options.servers[i]!.baseUrl,
        updates: w.updates,
        version: w.version,
        name: w.name,
      })),
    };
  }

  async sync(): Promise<void> {
    for (const info of this.options.learner.policies()) {
      const s = this.policyState(info.id);
      while (s.served.some((w) => w.updates !== s.updates)) {
        await (s.push ?? this.startPush(info.id));
        if (s.error && s.served.some((w) => w.updates !== s.updates)) throw s.error;
      }
    }
  }

  /** Waits for pushes in flight, then closes the servers' clients and the learner. */
  async close(): Promise<void> {
    await Promise.all([...this.state.values()].map((s) => s.push));
    await Promise.all(this.options.servers.map((s) => s.close()));
    await this.options.learner.close();
  }

  /** The servers that may serve the policy now, after waiting (or pushing) if none may. */
  private async ready(policyId: PolicyId): Promise<number[]> {
    const s = this.policyState(policyId);
    for (let waited = false; ; waited = true) {
      if (waited && s.error) throw s.error;
      const behind = s.served.some((w) => w.updates !== s.updates);
      // A push in flight pushes again if it finds newer updates when it is done.
      if (behind && s.push === undefined) void this.startPush(policyId);
      const eligible = s.served.flatMap((w, i) =>
        w.updates !== undefined && w.updates >= s.updates - this.maxStaleness ? [i] : [],
      );
      if (eligible.length > 0) return eligible;
      await s.push;
    }
  }

  private updated(policyId: PolicyId): void {
    this.policyState(policyId).updates++;
  }

  /** Pushes the newest weights until the servers hold them (or a push fails). Never rejects. */
  private startPush(policyId: PolicyId): Promise<void> {
    const s = this.policyState(policyId);
    const run = async () => {
      s.error = undefined;
      for (;;) {
        const updates = s.updates;
        const version = this.learnerVersion(policyId);
        const name = `${policyId}-v${version}`;
        try {
          await this.pushOnce(policyId, updates, version, name);
        } catch (error) {
          s.error = oneLine(`weight sync of policy "${policyId}" (${name})`, error);
          return;
        }
        if (s.updates === updates) return;
      }
    };
    const push = run().finally(() => {
      if (s.push === push) s.push = undefined;
    });
    s.push = push;
    return push;
  }

  private async pushOnce(policyId: PolicyId, updates: number, version: number, name: string): Promise<void> {
    const s = this.policyState(policyId);
    const folder = await this.options.writeWeights(policyId, name);
    const replaced = new Set(s.served.map((w) => w.folder));
    await Promise.all(
      this.options.servers.map(async (server, i) => {
        const served = s.served[i]!;
        if (this.options.weightSync === "lora") {
          await server.serveAdapter(policyId, name, folder);
          const old = served.name;
          Object.assign(served, { updates, version, name, folder });
          if (old !== undefined && old !== name) await server.unloadAdapter(policyId, old);
        } else {
          await server.reloadWeights(policyId, this.options.reloadPath!, folder);
          Object.assign(served, { updates, version, name, folder });
        }
      }),
    );
    // Every server serves `folder` now: the policy's folders before it are unused.
    for (const old of replaced) {
      if (old !== undefined && old !== folder) await this.options.releaseWeights?.(old);
    }
  }

  private learnerVersion(policyId: PolicyId): number {
    const info = this.options.learner.policies().find((p) => p.id === policyId);
    if (info === undefined) {
      const known = this.options.learner
        .policies()
        .map((p) => p.id)
        .join(", ");
      throw new Error(`unknown policy "${policyId}" (the learner has: ${known})`);
    }
    return info.optimizerStep;
  }

  private policyState(policyId: PolicyId): PolicySync {
    let s = this.state.get(policyId);
    if (s === undefined) {
      this.learnerVersion(policyId); // names an unknown policy
      s = {
        updates: 0,
        served: this.options.servers.map(() => ({
          updates: undefined,
          version: undefined,
          name: undefined,
          folder: undefined,
        })),
        push: undefined,
        error: undefined,
      };
      this.state.set(policyId, s);
    }
    return s;
  }
}

/**
 * `context: message` on one line (server bodies may hold newlines), the original as its cause;
 * without the context when the message already names `unlessNamed` (the server's URL).
 */
function oneLine(context: string, error: unknown, unlessNamed?: string): Error {
  const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, " ");
  const named = unlessNamed !== undefined && message.includes(unlessNamed);
  return new Error(named ? message : `${context}: ${message}`, { cause: error });
}
