/**
 * The OpenAI engine: rollouts on any OpenAI-compatible server (vLLM, SGLang, llama.cpp server,
 * OpenAI). It generates and scores; it does not train — a learner trains elsewhere, pushes the new
 * adapter to the store, and tells the server to load it (reloadAdapter).
 *
 * Which endpoint generate() uses, per policy:
 * - with a `tokenizer`: the prompt is rendered (its chat template) and tokenized here, and sent to
 *   POST /v1/completions as token ids. The prompt ids in the Completion are then exactly what the
 *   model saw — what PPO needs — and the server's chat template does not matter.
 * - without: POST /v1/chat/completions with `logprobs: true`; the server renders the prompt. Its
 *   ids come back only from vLLM ≥ 0.10.2 (`return_token_ids`).
 *
 * Completion token ids, in order of preference: the answer's `token_ids` (vLLM `return_token_ids`);
 * the logprob tokens spelled `token_id:N` (vLLM `return_tokens_as_token_ids`); the policy's
 * tokenizer re-encoding the text (only accepted when it gives one id per returned log-prob). When
 * none works, `requireTokenIds` decides between an error and empty ids.
 */
import type { Completion, Observation, PolicyId, SamplingParams } from "@troupe/core";
import { SamplingParamsSchema } from "@troupe/core";
import type {
  CheckpointFiles,
  Engine,
  EngineGenerateRequest,
  PolicyInfo,
  TokenSequence,
  TrainMetrics,
} from "@troupe/engine";
import type { z } from "zod";
import {
  type OpenAIEngineConfig,
  type OpenAIEngineConfigInput,
  type PolicyModel,
  parseConfig,
} from "./config.ts";
import { OpenAIRequestError, ResponseFormatError, UnsupportedOperationError } from "./errors.ts";
import { PolicyGate } from "./gate.ts";
import { HttpClient, type HttpResult } from "./http.ts";
import { chatCompletionsBody, completionsBody, echoScoringBody, type JsonBody } from "./requests.ts";
import {
  ChatCompletionsResponseSchema,
  CompletionsResponseSchema,
  EchoResponseSchema,
  parseResponse,
} from "./schemas.ts";
import { parseTokenIdTokens } from "./tokens.ts";
import { type EngineUsage, UsageMeter } from "./usage.ts";

export interface ReloadAdapterOptions {
  /**
   * true (default): one POST /v1/load_lora_adapter with `load_inplace: true`, which replaces the
   * weights under the same name (recent vLLM). false: POST /v1/unload_lora_adapter (a "not found"
   * answer is fine) then /v1/load_lora_adapter, for vLLM versions without in-place loading.
   */
  readonly inPlace?: boolean;
}

export interface OpenAIEngine extends Engine {
  readonly kind: "openai";
  /**
   * Tells a vLLM server (started with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True) to serve the LoRA
   * adapter in folder `path` — a path on the server's machine — under this policy's model name.
   * Waits for the policy's requests in flight and holds new ones until the load is done.
   */
  reloadAdapter(policyId: PolicyId, path: string, options?: ReloadAdapterOptions): Promise<void>;
  /**
   * Loads the LoRA adapter in folder `path` (on the server's machine) under a new name and, once
   * loaded, sends this policy's later requests with `model: name`; requests in flight finish on the
   * name they started with. A name the server already holds (a restarted trainer re-sending a
   * version) is unloaded and loaded again, so the server serves the folder's weights.
   */
  serveAdapter(policyId: PolicyId, name: string, path: string): Promise<void>;
  /**
   * Unloads adapter `name` once this policy's requests in flight are done (new ones wait for the
   * unload). An adapter the server does not hold is fine.
   */
  unloadAdapter(policyId: PolicyId, name: string): Promise<void>;
  /**
   * Full-weight sync: POST `route` `{"model_path": path}` (SGLang's /update_weights_from_disk; vLLM
   * has no standard route), holding this policy's new requests until the server answers.
   */
  reloadWeights(policyId: PolicyId, route: string, path: string): Promise<void>;
  /** The server root requests go to. */
  readonly baseUrl: string;
  /** Requests, attempts and tokens so far. */
  usage(): EngineUsage;
}

export function createOpenAIEngine(config: OpenAIEngineConfigInput): OpenAIEngine {
  return new OpenAIEngineImpl(parseConfig(config));
}

const COMPLETIONS = "/v1/completions";
const CHAT_COMPLETIONS = "/v1/chat/completions";
const LOAD_LORA = "/v1/load_lora_adapter";
const UNLOAD_LORA = "/v1/unload_lora_adapter";

class OpenAIEngineImpl implements OpenAIEngine {
  readonly kind = "openai" as const;
  private readonly http: HttpClient;
  private readonly gate = new PolicyGate();
  private readonly meter = new UsageMeter();
  private readonly promptLogprobs: boolean;
  /** Policies whose requests now name another model (an adapter loaded by serveAdapter). */
  private readonly servedModels = new Map<PolicyId, string>();

  constructor(private readonly config: OpenAIEngineConfig) {
    this.http = new HttpClient({
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      concurrency: config.concurrency,
      timeoutMs: config.timeoutMs,
      backoff: { retries: config.retries, ...config.backoff },
      fetch: config.fetch ?? ((input, init) => fetch(input, init)),
      random: config.random ?? Math.random,
    });
    this.promptLogprobs = config.promptLogprobs ?? config.dialect === "vllm";
  }

  get baseUrl(): string {
    return this.config.baseUrl;
  }

  /** A remote model's size is unknown here: parameters 0; vocabSize from the tokenizer, else 0. */
  policies(): readonly PolicyInfo[] {
    return Object.entries(this.config.models).map(([id, m]) => ({
      id,
      parameters: 0,
      vocabSize: m.tokenizer?.vocabSize ?? 0,
      optimizerStep: 0,
    }));
  }

  usage(): EngineUsage {
    return this.meter.snapshot();
  }

  /**
   * One HTTP request per generate request (n = 1, its own seed), all issued at once and throttled
   * by the concurrency limit. If one fails for good, the others of the batch are cancelled and the
   * batch rejects with the first error.
   */
  async generate(
    requests: readonly EngineGenerateRequest[],
    sampling: SamplingParams,
  ): Promise<Completion[]> {
    this.assertOpen("generate");
    const params = SamplingParamsSchema.parse(sampling);
    requests.forEach((r, i) => {
      this.policy(r.policyId, `requests[${i}].policyId`);
      if (!Number.isSafeInteger(r.seed) || r.seed < 0) {
        throw new Error(`generate: requests[${i}].seed = ${r.seed} must be a non-negative integer`);
      }
    });
    const batch = new AbortController();
    return Promise.all(
      requests.map((r) =>
        this.generateOne(r, params, batch.signal).catch((error: unknown) => {
          batch.abort(error);
          throw error;
        }),
      ),
    );
  }

  private generateOne(
    request: EngineGenerateRequest,
    sampling: SamplingParams,
    signal: AbortSignal,
  ): Promise<Completion> {
    const policy = this.policy(request.policyId, "policyId");
    return this.gate.shared(request.policyId, () =>
      this.metered(request.policyId, (onResult) =>
        policy.tokenizer === undefined
          ? this.generateChat({ request, policy, sampling, signal, onResult })
          : this.generateFromTokens({ request, policy, sampling, signal, onResult }),
      ),
    );
  }

  private async generateFromTokens(call: GenerateCall): Promise<Completion> {
    const { request, policy } = call;
    const tokenizer = policy.tokenizer!;
    const promptText = tokenizer.renderChat(request.observation.messages, true);
    const localPromptIds = tokenizer.encode(promptText);
    const asIds = this.config.promptFormat === "token-ids";
    const body = completionsBody(
      this.modelOf(request.policyId, policy),
      asIds ? localPromptIds : promptText,
      call.sampling,
      request.seed,
      this.config.dialect,
      policy.extraBody,
    );
    const { url, response } = await this.postParsed(call, COMPLETIONS, body, CompletionsResponseSchema);
    const choice = response.choices[0]!;
    const logprobs = choice.logprobs.token_logprobs.map((lp, i) => {
      if (lp === null)
        throw new ResponseFormatError(url, `choices[0].logprobs.token_logprobs[${i}]`, "is null");
      return lp;
    });
    if (choice.logprobs.tokens.length !== logprobs.length) {
      throw new ResponseFormatError(
        url,
        "choices[0].logprobs.tokens",
        `has ${choice.logprobs.tokens.length} tokens but token_logprobs has ${logprobs.length}`,
      );
    }
    // Text prompts are tokenized by the server: trust its ids when it reports them.
    const promptTokenIds = asIds ? localPromptIds : (choice.prompt_token_ids ?? localPromptIds);
    const tokenIds = this.completionIds(url, policy, request.policyId, {
      field: "choices[0]",
      tokenIds: choice.token_ids,
      tokens: choice.logprobs.tokens,
      text: choice.text,
      count: logprobs.length,
    });
    return { text: choice.text, promptTokenIds, tokenIds, logprobs, finishReason: choice.finish_reason };
  }

  private async generateChat(call: GenerateCall): Promise<Completion> {
    const { request, policy } = call;
    const body = chatCompletionsBody(
      this.modelOf(request.policyId, policy),
      request.observation.messages,
      call.sampling,
      request.seed,
      this.config.dialect,
      policy.extraBody,
    );
    const { url, response } = await this.postParsed(
      call,
      CHAT_COMPLETIONS,
      body,
      ChatCompletionsResponseSchema,
    );
    const choice = response.choices[0]!;
    const text = choice.message.content ?? "";
    const content = choice.logprobs.content;
    const logprobs = content.map((c) => c.logprob);
    let promptTokenIds: readonly number[] | undefined = response.prompt_token_ids ?? undefined;
    if (promptTokenIds === undefined) {
      if (this.config.requireTokenIds) {
        throw new UnsupportedOperationError(
          `POST ${url}: the server returned no prompt_token_ids for policy "${request.policyId}" ` +
            "(vLLM ≥ 0.10.2 does, for return_token_ids: true). Give the policy a `tokenizer` so the " +
            "engine renders and tokenizes prompts itself (and uses /v1/completions), or set " +
            "requireTokenIds: false to accept completions without token ids.",
        );
      }
      promptTokenIds = [];
    }
    const tokenIds = this.completionIds(url, policy, request.policyId, {
      field: "choices[0]",
      tokenIds: choice.token_ids,
      tokens: content.map((c) => c.token),
      text,
      count: logprobs.length,
    });
    return { text, promptTokenIds, tokenIds, logprobs, finishReason: choice.finish_reason };
  }

  /** The completion's token ids, by the first source that works (see the file comment). */
  private completionIds(
    url: string,
    policy: PolicyModel,
    policyId: PolicyId,
    answer: {
      field: string;
      tokenIds: readonly number[] | null | undefined;
      tokens: readonly string[];
      text: string;
      count: number;
    },
  ): readonly number[] {
    if (answer.tokenIds !== undefined && answer.tokenIds !== null) {
      if (answer.tokenIds.length !== answer.count) {
        throw new ResponseFormatError(
          url,
          `${answer.field}.token_ids`,
          `has ${answer.tokenIds.length} ids but there are ${answer.count} log-probs`,
        );
      }
      return answer.tokenIds;
    }
    const parsed = parseTokenIdTokens(answer.tokens);
    if (parsed !== undefined) return parsed;
    let why = "the server returned neither token_ids nor tokens spelled token_id:N";
    if (policy.tokenizer !== undefined) {
      const reencoded = policy.tokenizer.encode(answer.text);
      if (reencoded.length === answer.count) return reencoded;
      why += `, and re-encoding the text with the policy's tokenizer gives ${reencoded.length} ids for ${answer.count} log-probs`;
    }
    if (!this.config.requireTokenIds) return [];
    throw new UnsupportedOperationError(
      `POST ${url}: no completion token ids for policy "${policyId}": ${why}. Use vLLM ` +
        '(dialect "vllm" asks for return_tokens_as_token_ids), give the policy the tokenizer of the ' +
        "served model, or set requireTokenIds: false to accept completions without token ids.",
    );
  }

  /**
   * The policy's prompt and (optionally) a completion as token ids, with the policy's tokenizer —
   * the same rendering generate() sends to /v1/completions; the completion ends with the
   * tokenizer's end-of-turn id. Without a tokenizer the server's chat template is unknown here, so
   * this throws.
   */
  encode(policyId: PolicyId, observation: Observation, completion?: string): TokenSequence {
    const tokenizer = this.policy(policyId, "policyId").tokenizer;
    if (tokenizer === undefined) {
      throw new UnsupportedOperationError(
        `encode(): policy "${policyId}" has no tokenizer; give it the served model's tokenizer in models.${policyId}.tokenizer`,
      );
    }
    const promptTokenIds = tokenizer.encodeChat(observation.messages);
    const completionTokenIds =
      completion === undefined ? [] : [...tokenizer.encode(completion), tokenizer.eosTokenId];
    return { promptTokenIds, completionTokenIds };
  }

  /**
   * Log-probs of each completion token given everything before it, one request per sequence:
   * POST /v1/completions { prompt: prompt ++ completion, echo: true, logprobs, max_tokens: 1 }.
   * The server's raw model log-probs (no temperature): vLLM's prompt log-probs are computed from
   * the unprocessed logits.
   */
  async logprobs(policyId: PolicyId, sequences: readonly TokenSequence[]): Promise<number[][]> {
    this.assertOpen("logprobs");
    const policy = this.policy(policyId, "policyId");
    if (!this.promptLogprobs) {
      throw new UnsupportedOperationError(
        `logprobs(): not supported by this backend (dialect "${this.config.dialect}"): scoring needs ` +
          "/v1/completions with echo + logprobs, which OpenAI's current models refuse. Set " +
          "promptLogprobs: true if your server supports it (vLLM does).",
      );
    }
    sequences.forEach((s, i) => {
      if (s.promptTokenIds.length === 0) {
        throw new Error(
          `logprobs: sequences[${i}].promptTokenIds is empty (the first token has no log-prob)`,
        );
      }
    });
    const batch = new AbortController();
    return Promise.all(
      sequences.map((s) =>
        this.scoreOne(policyId, policy, s, batch.signal).catch((error: unknown) => {
          batch.abort(error);
          throw error;
        }),
      ),
    );
  }

  private async scoreOne(
    policyId: PolicyId,
    policy: PolicyModel,
    sequence: TokenSequence,
    signal: AbortSignal,
  ): Promise<number[]> {
    if (sequence.completionTokenIds.length === 0) return [];
    const ids = [...sequence.promptTokenIds, ...sequence.completionTokenIds];
    const url = this.url(COMPLETIONS);
    return this.gate.shared(policyId, () =>
      this.metered(policyId, async (onResult) => {
        let result: HttpResult;
        try {
          result = await this.http.post(
            COMPLETIONS,
            echoScoringBody(this.modelOf(policyId, policy), ids, this.config.dialect, policy.extraBody),
            signal,
          );
        } catch (error) {
          if (error instanceof OpenAIRequestError && error.failure === "status" && error.status! < 500) {
            throw new UnsupportedOperationError(
              `logprobs(): the server refused echo scoring (${error.message}); if it does not support ` +
                "echo + logprobs on /v1/completions, logprobs() is not supported by this backend.",
              { cause: error },
            );
          }
          throw error;
        }
        const response = parseResponse(EchoResponseSchema, result.text, url);
        onResult(result, response.usage);
        const { tokens, token_logprobs } = response.choices[0]!.logprobs;
        if (token_logprobs.length < ids.length) {
          throw new UnsupportedOperationError(
            `logprobs(): not supported by this backend: POST ${url} returned ${token_logprobs.length} ` +
              `log-probs for a sequence of ${ids.length} tokens (echo ignored?)`,
          );
        }
        // When the server names the tokens by id, check it scored the sequence we sent.
        const echoed = parseTokenIdTokens(tokens.slice(0, ids.length));
        if (echoed !== undefined) {
          const k = echoed.findIndex((id, i) => id !== ids[i]);
          if (k >= 0) {
            throw new ResponseFormatError(
              url,
              `choices[0].logprobs.tokens[${k}]`,
              `is token_id:${echoed[k]} but the sequence has ${ids[k]} there`,
            );
          }
        }
        const out: number[] = [];
        for (let i = sequence.promptTokenIds.length; i < ids.length; i++) {
          const lp = token_logprobs[i];
          if (lp === null || lp === undefined) {
            throw new ResponseFormatError(url, `choices[0].logprobs.token_logprobs[${i}]`, "is null");
          }
          out.push(lp);
        }
        return out;
      }),
    );
  }

  async reloadAdapter(policyId: PolicyId, path: string, options: ReloadAdapterOptions = {}): Promise<void> {
    this.assertOpen("reloadAdapter");
    const policy = this.policy(policyId, "policyId");
    if (path.length === 0) throw new Error("reloadAdapter: path is empty");
    const inPlace = options.inPlace ?? true;
    await this.gate.exclusive(policyId, async () => {
      if (!inPlace) {
        try {
          await this.http.post(UNLOAD_LORA, { lora_name: policy.model });
        } catch (error) {
          if (!isNotLoaded(error)) loraHint(error);
        }
      }
      const body: Record<string, unknown> = { lora_name: policy.model, lora_path: path };
      if (inPlace) body.load_inplace = true;
      await this.http.post(LOAD_LORA, body).catch(loraHint);
    });
  }

  async serveAdapter(policyId: PolicyId, name: string, path: string): Promise<void> {
    this.assertOpen("serveAdapter");
    this.policy(policyId, "policyId");
    if (name.length === 0 || path.length === 0)
      throw new Error("serveAdapter: name and path must be non-empty");
    const body = { lora_name: name, lora_path: path };
    try {
      await this.http.post(LOAD_LORA, body);
    } catch (error) {
      // vLLM refuses a name it holds ("... has already been loaded"): replace it.
      const held =
        error instanceof OpenAIRequestError && error.status === 400 && /already/i.test(error.body ?? "");
      if (!held) loraHint(error);
      await this.unloadAdapter(policyId, name);
      await this.http.post(LOAD_LORA, body).catch(loraHint);
    }
    this.servedModels.set(policyId, name);
  }

  async unloadAdapter(policyId: PolicyId, name: string): Promise<void> {
    this.assertOpen("unloadAdapter");
    this.policy(policyId, "policyId");
    await this.gate.exclusive(policyId, async () => {
      try {
        await this.http.post(UNLOAD_LORA, { lora_name: name });
      } catch (error) {
        if (!isNotLoaded(error)) loraHint(error);
      }
    });
  }

  async reloadWeights(policyId: PolicyId, route: string, path: string): Promise<void> {
    this.assertOpen("reloadWeights");
    this.policy(policyId, "policyId");
    if (!route.startsWith("/")) throw new Error(`reloadWeights: route "${route}" must start with /`);
    await this.gate.exclusive(policyId, async () => {
      await this.http.post(route, { model_path: path }).catch((error: unknown) => {
        if (error instanceof OpenAIRequestError && (error.status === 404 || error.status === 405)) {
          throw new UnsupportedOperationError(
            `reloadWeights(): ${error.message}. The server has no ${route} route (SGLang: /update_weights_from_disk; vLLM has no standard reload route).`,
            { cause: error },
          );
        }
        throw error;
      });
    });
  }

  trainStep(): Promise<TrainMetrics> {
    return Promise.reject(generateOnly("trainStep"));
  }

  save(): Promise<CheckpointFiles> {
    return Promise.reject(generateOnly("save"));
  }

  load(): Promise<void> {
    return Promise.reject(generateOnly("load"));
  }

  /** Cancels every request in flight; later calls throw. */
  async close(): Promise<void> {
    this.http.close();
  }

  private policy(id: PolicyId, field: string): PolicyModel {
    const policy = this.config.models[id];
    if (policy === undefined) {
      const known = Object.keys(this.config.models).join(", ");
      throw new Error(`${field}: unknown policy "${id}" (this engine serves: ${known})`);
    }
    return policy;
  }

  private modelOf(policyId: PolicyId, policy: PolicyModel): string {
    return this.servedModels.get(policyId) ?? policy.model;
  }

  private assertOpen(call: string): void {
    if (this.http.closed) throw new Error(`${call}: the engine is closed`);
  }

  private url(path: string): string {
    return `${this.config.baseUrl}${path}`;
  }

  /** POSTs a generate call's `body` to `path` and parses the answer with `schema`, reporting attempts and usage. */
  private async postParsed<S extends z.ZodType<{ readonly usage?: TokenUsage | null }>>(
    call: GenerateCall,
    path: string,
    body: JsonBody,
    schema: S,
  ): Promise<{ url: string; response: z.output<S> }> {
    const result = await this.http.post(path, body, call.signal);
    const url = this.url(path);
    const response = parseResponse(schema, result.text, url);
    call.onResult(result, response.usage);
    return { url, response };
  }

  /** Runs one logical request and records it in the usage meter, success or failure. */
  private async metered<T>(policyId: PolicyId, fn: (onResult: OnResult) => Promise<T>): Promise<T> {
    let attempts = 0;
    let usage: TokenUsage | null | undefined;
    try {
      const out = await fn((result, u) => {
        attempts = result.attempts;
        usage = u;
      });
      this.meter.record(policyId, {
        ok: true,
        attempts,
        promptTokens: usage?.prompt_tokens,
        completionTokens: usage?.completion_tokens,
      });
      return out;
    } catch (error) {
      if (error instanceof OpenAIRequestError) attempts = error.attempts;
      this.meter.record(policyId, { ok: false, attempts });
      throw error;
    }
  }
}

interface TokenUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
}

/** Takes a request's HTTP result (its attempts) and the token usage its answer reports. */
type OnResult = (result: HttpResult, usage?: TokenUsage | null) => void;

/** One generate request on its way to the server. */
interface GenerateCall {
  readonly request: EngineGenerateRequest;
  readonly policy: PolicyModel;
  readonly sampling: SamplingParams;
  readonly signal: AbortSignal;
  readonly onResult: OnResult;
}

/** A 404/405 from the adapter routes means runtime LoRA updating is off: say how to turn it on. */
function loraHint(error: unknown): never {
  if (error instanceof OpenAIRequestError && (error.status === 404 || error.status === 405)) {
    throw new UnsupportedOperationError(
      `${error.message}. Start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora ` +
        "to enable /v1/load_lora_adapter.",
      { cause: error },
    );
  }
  throw error;
}

/** Unloading an adapter the server does not hold: vLLM answers 404 (older versions 400) naming it. */
function isNotLoaded(error: unknown): boolean {
  return (
    error instanceof OpenAIRequestError &&
    (error.status === 404 || error.status === 400) &&
    /not found|cannot be found|does not exist|not loaded/i.test(error.body ?? "")
  );
}

function generateOnly(call: string): UnsupportedOperationError {
  return new UnsupportedOperationError(
    `${call}(): the openai engine only generates and scores. Train with the onnx or torch engine, ` +
      "push the new adapter to the store, then call reloadAdapter(policyId, path) so the server serves it.",
  );
}
