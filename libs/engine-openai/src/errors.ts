/**
 * Errors of the OpenAI engine. Each says what was asked of which server and what went wrong, so a
 * failed rollout can be diagnosed from its message alone.
 */

/** How a request failed: an HTTP status, no answer in time, no connection, or the engine closed. */
export type RequestFailure = "status" | "timeout" | "network" | "closed";

export class OpenAIRequestError extends Error {
  override readonly name = "OpenAIRequestError";
  constructor(
    readonly failure: RequestFailure,
    readonly url: string,
    /** Attempts made, retries included. */
    readonly attempts: number,
    detail: string,
    /** The HTTP status, for failure "status". */
    readonly status?: number,
    /** The response body (truncated), for failure "status". */
    readonly body?: string,
    options?: { cause?: unknown },
  ) {
    super(`POST ${url}: ${detail}${attempts > 1 ? ` (gave up after ${attempts} attempts)` : ""}`, options);
  }
}

/** A response that is not what an OpenAI-compatible server sends; `field` is the path of the culprit. */
export class ResponseFormatError extends Error {
  override readonly name = "ResponseFormatError";
  constructor(
    readonly url: string,
    readonly field: string,
    detail: string,
  ) {
    super(`POST ${url}: malformed response: ${field}: ${detail}`);
  }
}

/** An operation this engine or this backend cannot do (training, or scoring on a server without echo). */
export class UnsupportedOperationError extends Error {
  override readonly name = "UnsupportedOperationError";
}

/** The message of an OpenAI-style error body `{"error": {"message": …}}`, else the body itself (truncated). */
export function errorBodyMessage(body: string, maxChars = 500): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof parsed.error === "string") return parsed.error;
    if (typeof parsed.error?.message === "string") return parsed.error.message;
    if (typeof parsed.message === "string") return parsed.message;
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return body.length > maxChars ? `${body.slice(0, maxChars)}…` : body;
}
