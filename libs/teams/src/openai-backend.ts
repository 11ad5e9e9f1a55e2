/**
 * The OpenAI-compatible backend: each policy of a team is a model (or LoRA adapter) on a vLLM /
 * SGLang / OpenAI server, named `<team>-<policy>` unless `modelFor` says otherwise.
 *
 * Prompts are rendered here with the policy's own published tokenizer (its chat template) and sent
 * as token ids to /v1/completions, so the server sees exactly the prompt the policy was trained
 * on, whatever chat template the server would have applied.
 */
import { enginePolicy, loadTokenizer, TOKENIZER_FILES } from "@troupe/engine";
import { createOpenAIEngine, type OpenAIEngine } from "@troupe/engine-openai";
import type { InferenceBackend, ServingPolicy, ServingPolicySet } from "./backend.ts";
import type { TeamManifest } from "./manifest.ts";
import type { TeamRegistry } from "./registry.ts";

export interface OpenAIBackendOptions {
  /** Server root, e.g. `http://127.0.0.1:8000` (a trailing `/v1` is fine). */
  readonly baseUrl: string;
  readonly apiKey?: string | undefined;
  /** Model name of a policy; default `<team>-<policy>`. */
  readonly modelFor?: ((manifest: TeamManifest, policyId: string) => string) | undefined;
  readonly fetch?: typeof fetch | undefined;
  /** HTTP requests in flight at once, all teams together per team version (engine-openai default 16). */
  readonly concurrency?: number | undefined;
  /** Limit of one HTTP attempt (engine-openai default 120 000 ms). */
  readonly timeoutMs?: number | undefined;
  /** Retries after the first attempt (engine-openai default 4). */
  readonly retries?: number | undefined;
  /** `vllm` (default) or `openai` (only OpenAI fields). */
  readonly dialect?: "vllm" | "openai" | undefined;
}

export const defaultModelName = (manifest: TeamManifest, policyId: string) => `${manifest.name}-${policyId}`;

export function createOpenAIBackend(options: OpenAIBackendOptions): InferenceBackend {
  const modelFor = options.modelFor ?? defaultModelName;
  /** One engine per team version (its policies' tokenizers are part of the version). */
  const engines = new Map<string, Promise<OpenAIEngine>>();

  async function buildEngine(manifest: TeamManifest, registry: TeamRegistry): Promise<OpenAIEngine> {
    const models: Record<string, { model: string; tokenizer: ReturnType<typeof loadTokenizer> }> = {};
    for (const policyId of Object.keys(manifest.policies)) {
      const files: Record<string, Uint8Array> = {};
      for (const name of TOKENIZER_FILES) {
        if (manifest.policies[policyId]!.files[name] !== undefined) {
          files[name] = await registry.readFile(manifest, policyId, name);
        }
      }
      models[policyId] = { model: modelFor(manifest, policyId), tokenizer: loadTokenizer(files) };
    }
    return createOpenAIEngine({
      baseUrl: options.baseUrl,
      models,
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
      ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.retries !== undefined ? { retries: options.retries } : {}),
      ...(options.dialect !== undefined ? { dialect: options.dialect } : {}),
    });
  }

  return {
    name: "openai",
    async policies(manifest: TeamManifest, registry: TeamRegistry): Promise<ServingPolicySet> {
      const key = `${manifest.name}@${manifest.version}`;
      let engine = engines.get(key);
      if (engine === undefined) {
        engine = buildEngine(manifest, registry);
        engines.set(key, engine);
        engine.catch(() => engines.delete(key)); // a failed build is retried by the next request
      }
      const ready = await engine;
      // The engine cannot cancel one request; the abort is honoured by solve() racing the signal.
      return Object.fromEntries(
        Object.keys(manifest.policies).map((id) => [
          id,
          enginePolicy(ready, id, manifest.version) as ServingPolicy,
        ]),
      );
    },
    async close(): Promise<void> {
      const all = [...engines.values()];
      engines.clear();
      for (const engine of all) await (await engine.catch(() => undefined))?.close();
    },
  };
}
