/**
 * Configuration of the OpenAI engine, validated with zod. Every knob has its default here.
 */
import type { Tokenizer } from "@troupe/engine";
import { z } from "zod";
import type { FetchLike } from "./http.ts";
import { BackoffConfigSchema } from "./retry.ts";

function isTokenizer(value: unknown): value is Tokenizer {
  const t = value as Partial<Tokenizer> | null;
  return (
    typeof t === "object" &&
    t !== null &&
    typeof t.encode === "function" &&
    typeof t.decode === "function" &&
    typeof t.renderChat === "function"
  );
}

export const PolicyModelSchema = z.object({
  /**
   * The `model` field of every request for this policy: the served model name, or the name of a
   * LoRA adapter (vLLM `--lora-modules name=path`, or the `lora_name` of reloadAdapter).
   */
  model: z.string().min(1),
  /**
   * The policy's tokenizer (`@troupe/engine` ByteTokenizer / HfTokenizer / loadTokenizer). With
   * one, prompts are rendered and tokenized here and sent to /v1/completions, so the prompt token
   * ids are exactly those the server saw; without one, /v1/chat/completions renders the prompt with
   * the server's chat template.
   */
  tokenizer: z.custom<Tokenizer>(isTokenizer, "must be a Tokenizer (encode, decode, renderChat)").optional(),
  /** Extra request fields for this policy (e.g. `{ min_p: 0.05 }`), merged last: they override ours. */
  extraBody: z.record(z.string(), z.unknown()).optional(),
});
export type PolicyModel = z.infer<typeof PolicyModelSchema>;

export const OpenAIEngineConfigSchema = z.object({
  /**
   * The server root, e.g. `http://127.0.0.1:8000`. A trailing `/` or `/v1` is dropped (the engine
   * appends `/v1/completions` etc.), so the usual OpenAI-client base URL also works.
   */
  baseUrl: z.url().transform((url) => url.replace(/\/+$/, "").replace(/\/v1$/, "")),
  /** Sent as `Authorization: Bearer <apiKey>` (vLLM `--api-key`, OpenAI). */
  apiKey: z.string().min(1).optional(),
  /** The model (or LoRA adapter) of each policy id. */
  models: z
    .record(z.string().min(1), PolicyModelSchema)
    .refine((models) => Object.keys(models).length > 0, "must name at least one policy"),
  /** Most HTTP requests in flight at once (all policies together). */
  concurrency: z.number().int().min(1).default(16),
  /** Limit of one attempt (ms); a timed-out attempt is retried. */
  timeoutMs: z.number().int().min(1).default(120_000),
  /** Retries after the first attempt, on 429, 5xx, timeouts and network errors. */
  retries: z.number().int().min(0).default(4),
  /** Backoff between retries (retry.ts): initialDelayMs 250, multiplier 2, maxDelayMs 10 000, maxRetryAfterMs 60 000. */
  backoff: BackoffConfigSchema.omit({ retries: true }).prefault({}),
  /**
   * `vllm` (also SGLang and other vLLM-style servers): sends top_k, stop_token_ids and asks for
   * token ids (`return_tokens_as_token_ids`, `return_token_ids`). `openai`: only fields of the
   * OpenAI API; top-k and stop token ids are then refused rather than silently dropped.
   */
  dialect: z.enum(["vllm", "openai"]).default("vllm"),
  /**
   * How a tokenizer-rendered prompt is sent to /v1/completions: as its token ids (exact; vLLM,
   * SGLang, llama.cpp and OpenAI's legacy endpoint accept a list of ints) or as text (the server
   * re-tokenizes it).
   */
  promptFormat: z.enum(["token-ids", "text"]).default("token-ids"),
  /**
   * When true (the default: RL needs them), a completion whose token ids cannot be obtained — the
   * server gave none and no tokenizer could recover them — is an error. When false it is returned
   * with empty `promptTokenIds` / `tokenIds` (text and log-probs only, e.g. for evaluation).
   */
  requireTokenIds: z.boolean().default(true),
  /**
   * Whether the server scores given sequences through /v1/completions with `echo` and
   * `logprobs` (vLLM does; OpenAI's current models do not). Default: true for dialect vllm.
   */
  promptLogprobs: z.boolean().optional(),
  /** The fetch to use: a Worker's service binding, or a test's. Default: the global fetch. */
  fetch: z.custom<FetchLike>((f) => typeof f === "function", "must be a function").optional(),
  /** Uniform [0, 1) source for the backoff jitter. Default Math.random. */
  random: z.custom<() => number>((f) => typeof f === "function", "must be a function").optional(),
});
export type OpenAIEngineConfig = z.infer<typeof OpenAIEngineConfigSchema>;
export type OpenAIEngineConfigInput = z.input<typeof OpenAIEngineConfigSchema>;

export function parseConfig(input: OpenAIEngineConfigInput): OpenAIEngineConfig {
  const result = OpenAIEngineConfigSchema.safeParse(input);
  if (!result.success) {
    const lines = result.error.issues.map(
      (i) => `  ${i.path.map(String).join(".") || "(root)"}: ${i.message}`,
    );
    throw new Error(`createOpenAIEngine: invalid config:\n${lines.join("\n")}`);
  }
  return result.data;
}
