/**
 * Request bodies: our SamplingParams → the fields of the OpenAI API (and vLLM's extensions).
 *
 *   temperature   → temperature
 *   topP          → top_p
 *   topK          → top_k            (vLLM/SGLang extension; 0 = disabled is sent as −1, which
 *                                     every vLLM version and SGLang read as "all tokens")
 *   maxTokens     → max_tokens
 *   stop          → stop             (omitted when empty)
 *   stopTokenIds  → stop_token_ids   (vLLM extension; omitted when empty)
 *   request seed  → seed             (one request per seed, n = 1: vLLM seeds a generator per
 *                                     request, so the same seed gives the same completion
 *                                     whatever else the server is batching)
 *
 * vLLM fills the fields a request leaves out from the model's generation_config.json (Qwen's sets
 * top_k 20 and repetition_penalty 1.05, for instance). The sampler must be exactly SamplingParams —
 * the PPO ratio compares against these log-probs — so the vllm dialect also sends the neutral
 * values of the knobs we do not model: min_p 0, repetition_penalty 1.
 */
import type { ChatMessage, SamplingParams } from "@troupe/core";

export type Dialect = "vllm" | "openai";
export type JsonBody = Record<string, unknown>;

export function samplingFields(sampling: SamplingParams, seed: number, dialect: Dialect): JsonBody {
  const body: JsonBody = {
    temperature: sampling.temperature,
    top_p: sampling.topP,
    max_tokens: sampling.maxTokens,
    seed,
    n: 1,
  };
  if (sampling.stop.length > 0) body.stop = [...sampling.stop];
  if (dialect === "openai") {
    if (sampling.topK > 0) {
      throw new Error(
        `sampling.topK = ${sampling.topK}: the OpenAI API has no top_k; use dialect "vllm" with a server that supports it, or topK 0`,
      );
    }
    if (sampling.stopTokenIds.length > 0) {
      throw new Error(
        `sampling.stopTokenIds = [${sampling.stopTokenIds.join(", ")}]: the OpenAI API has no stop_token_ids; use dialect "vllm", or stop strings`,
      );
    }
    return body;
  }
  body.top_k = sampling.topK > 0 ? sampling.topK : -1;
  body.min_p = 0;
  body.repetition_penalty = 1;
  if (sampling.stopTokenIds.length > 0) body.stop_token_ids = [...sampling.stopTokenIds];
  return body;
}

/** vLLM's switches for token ids in answers (ignored with a warning by servers that lack them). */
function tokenIdFields(dialect: Dialect): JsonBody {
  return dialect === "vllm" ? { return_tokens_as_token_ids: true, return_token_ids: true } : {};
}

/**
 * POST /v1/completions for a rendered prompt. `logprobs: 1`: the sampled token's log-prob always
 * comes back (plus the top-1 alternative); 1 rather than 0 because some servers treat 0 as "off".
 */
export function completionsBody(
  model: string,
  prompt: string | readonly number[],
  sampling: SamplingParams,
  seed: number,
  dialect: Dialect,
  extraBody: JsonBody = {},
): JsonBody {
  const input = { prompt: typeof prompt === "string" ? prompt : [...prompt] };
  return generationBody(model, input, 1, sampling, seed, dialect, extraBody);
}

/** POST /v1/chat/completions: the server applies its chat template. */
export function chatCompletionsBody(
  model: string,
  messages: readonly ChatMessage[],
  sampling: SamplingParams,
  seed: number,
  dialect: Dialect,
  extraBody: JsonBody = {},
): JsonBody {
  const input = { messages: messages.map((m) => ({ role: m.role, content: m.content })) };
  return generationBody(model, input, true, sampling, seed, dialect, extraBody);
}

/** A generation request's body: the model, its input, sampling, log-probs, token ids, then the policy's extras. */
function generationBody(
  model: string,
  input: JsonBody,
  logprobs: 1 | true,
  sampling: SamplingParams,
  seed: number,
  dialect: Dialect,
  extraBody: JsonBody,
): JsonBody {
  return {
    model,
    ...input,
    ...samplingFields(sampling, seed, dialect),
    logprobs,
    ...tokenIdFields(dialect),
    ...extraBody,
  };
}

/**
 * POST /v1/completions scoring a given sequence: the prompt is the whole sequence, `echo` returns
 * it with the log-prob of each token given the ones before (the first is null), and one token is
 * generated (max_tokens 1 rather than 0: more servers accept it; that token is ignored).
 */
export function echoScoringBody(
  model: string,
  sequence: readonly number[],
  dialect: Dialect,
  extraBody: JsonBody = {},
): JsonBody {
  return {
    model,
    prompt: [...sequence],
    echo: true,
    max_tokens: 1,
    temperature: 1,
    logprobs: 1,
    ...(dialect === "vllm" ? { return_tokens_as_token_ids: true } : {}),
    ...extraBody,
  };
}
