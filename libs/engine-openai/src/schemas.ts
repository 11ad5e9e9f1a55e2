/**
 * The answers of an OpenAI-compatible server, as zod schemas: only the fields the engine reads,
 * others pass through unchecked (servers add their own). vLLM's extensions are optional fields:
 * `token_ids` / `prompt_token_ids` (request flag `return_token_ids`, vLLM ≥ 0.10.2) and tokens
 * spelled `token_id:N` (request flag `return_tokens_as_token_ids`).
 */
import { z } from "zod";
import { ResponseFormatError } from "./errors.ts";

const tokenIds = z.array(z.number().int().min(0));

export const UsageSchema = z.object({
  prompt_tokens: z.number().int().min(0),
  completion_tokens: z.number().int().min(0).default(0),
});

/** Why generation ended. vLLM says "stop" for both EOS and stop strings; "abort" etc. are errors here. */
const FinishReasonSchema = z.enum(["stop", "length"]);

/** `/v1/completions` logprobs (the legacy OpenAI shape): parallel arrays over the tokens. */
export const CompletionLogprobsSchema = z.object({
  tokens: z.array(z.string()),
  /** null for the first prompt token when echoing (nothing precedes it). */
  token_logprobs: z.array(z.number().nullable()),
});

export const CompletionsResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        text: z.string(),
        finish_reason: FinishReasonSchema,
        logprobs: CompletionLogprobsSchema,
        token_ids: tokenIds.nullish(),
        prompt_token_ids: tokenIds.nullish(),
      }),
    )
    .min(1),
  usage: UsageSchema.nullish(),
});

/** `/v1/completions` with echo (scoring): the completion fields matter less, the logprobs are the point. */
export const EchoResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        logprobs: CompletionLogprobsSchema,
      }),
    )
    .min(1),
  usage: UsageSchema.nullish(),
});

export const ChatCompletionsResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullable() }),
        finish_reason: FinishReasonSchema,
        logprobs: z.object({
          content: z.array(z.object({ token: z.string(), logprob: z.number() })),
        }),
        token_ids: tokenIds.nullish(),
      }),
    )
    .min(1),
  prompt_token_ids: tokenIds.nullish(),
  usage: UsageSchema.nullish(),
});

/** `a.b[2].c` from a zod issue path. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out === "" ? "(root)" : out;
}

/** Parses a response body with `schema`; a failure names the first offending field. */
export function parseResponse<S extends z.ZodType>(schema: S, text: string, url: string): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    const head = text.length > 200 ? `${text.slice(0, 200)}…` : text;
    throw new ResponseFormatError(
      url,
      "(body)",
      `not JSON (${(e as Error).message}): ${JSON.stringify(head)}`,
    );
  }
  const result = schema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new ResponseFormatError(url, fieldPath(issue.path), issue.message);
  }
  return result.data;
}
