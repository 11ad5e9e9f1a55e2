/**
 * A minimal client for any OpenAI-compatible `POST {baseUrl}/chat/completions` endpoint
 * (OpenAI, vLLM, llama.cpp server, Ollama, …), used by the "expert" feedback transition.
 * Retries network errors, timeouts, 429 and 5xx with exponential backoff; other statuses fail
 * at once with the server's message.
 */
import type { ChatMessage } from "@troupe/core";
import { z } from "zod";

export interface ChatClientOptions {
  /** Base URL including the version prefix, e.g. `https://api.openai.com/v1`. Env: TROUPE_EXPERT_BASE_URL, then OPENAI_BASE_URL. */
  readonly baseUrl: string;
  /** Model name. Env: TROUPE_EXPERT_MODEL. */
  readonly model: string;
  /** Bearer token; omitted from the request when empty. Env: TROUPE_EXPERT_API_KEY, then OPENAI_API_KEY. */
  readonly apiKey?: string;
  /** Per-attempt timeout in ms. */
  readonly timeoutMs: number;
  /** Retries after the first attempt. */
  readonly retries: number;
  /** First backoff delay in ms; doubles every retry. */
  readonly backoffMs: number;
  readonly temperature: number;
  readonly maxTokens: number;
}

export const defaultChatClientOptions = {
  timeoutMs: 60_000,
  retries: 2,
  backoffMs: 500,
  temperature: 0,
  maxTokens: 512,
} as const;

export const ChatClientOptionsSchema = z.object({
  baseUrl: z.url("baseUrl must be an http(s) URL (set it or TROUPE_EXPERT_BASE_URL / OPENAI_BASE_URL)"),
  model: z.string().min(1, "model must be set (or TROUPE_EXPERT_MODEL)"),
  apiKey: z.string().optional(),
  timeoutMs: z.number().int().positive(),
  retries: z.number().int().min(0),
  backoffMs: z.number().min(0),
  temperature: z.number().min(0),
  maxTokens: z.number().int().positive(),
});

/** Options from explicit values, then the environment, then defaults; validated. */
export function chatClientOptions(
  overrides: Partial<ChatClientOptions> = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
): ChatClientOptions {
  const merged = {
    ...defaultChatClientOptions,
    baseUrl: env.TROUPE_EXPERT_BASE_URL ?? env.OPENAI_BASE_URL,
    model: env.TROUPE_EXPERT_MODEL,
    apiKey: env.TROUPE_EXPERT_API_KEY ?? env.OPENAI_API_KEY,
    ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)),
  };
  const parsed = ChatClientOptionsSchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`expert chat client: ${issue.path.join(".")}: ${issue.message}`);
  }
  return parsed.data;
}

const ChatResponseSchema = z.object({
  choices: z
    .array(z.object({ message: z.object({ content: z.string().nullable() }) }))
    .min(1, "response has no choices"),
});

class RetryableError extends Error {}

/** Sends one chat request and returns the first choice's text. */
export async function chatCompletion(
  options: ChatClientOptions,
  messages: readonly ChatMessage[],
  fetchImpl: typeof fetch = fetch,
): Promise<string> {
  const url = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
  const body = JSON.stringify({
    model: options.model,
    messages,
    temperature: options.temperature,
    max_tokens: options.maxTokens,
  });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  let lastError: Error | undefined;
  for (let attempt = 0; attempt <= options.retries; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, options.backoffMs * 2 ** (attempt - 1)));
    try {
      const response = await fetchImpl(url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      const text = await response.text();
      if (response.status === 429 || response.status >= 500)
        throw new RetryableError(`HTTP ${response.status}: ${text.slice(0, 300)}`);
      if (!response.ok)
        throw new Error(`expert endpoint ${url}: HTTP ${response.status}: ${text.slice(0, 300)}`);
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error(`expert endpoint ${url}: response is not JSON: ${text.slice(0, 200)}`);
      }
      const parsed = ChatResponseSchema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new Error(`expert endpoint ${url}: response ${issue.path.join(".")}: ${issue.message}`);
      }
      return parsed.data.choices[0]!.message.content ?? "";
    } catch (e) {
      const retryable =
        e instanceof RetryableError ||
        (e instanceof Error && (e.name === "TimeoutError" || e.name === "TypeError"));
      if (!retryable) throw e;
      lastError = e as Error;
    }
  }
  throw new Error(
    `expert endpoint ${url}: failed after ${options.retries + 1} attempts: ${lastError?.message}`,
  );
}
