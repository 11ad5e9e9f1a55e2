/**
 * The API's one error format:  { error: { code, message, path? } }
 *
 * Every failure a client can cause maps to a machine-readable `code` and an HTTP status; `path` is
 * the field path of the offending input (JSON body fields, query or path parameters), so a client
 * can point at the exact field. Anything unexpected becomes a 500 `internal` whose message says
 * nothing about the server's internals (no stack, no file names): the details go to the log.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";

/** The wire codes; `invalid_request` is 400 (malformed) or 422 (well-formed but not valid for the team). */
export type ErrorCode =
  | "invalid_request"
  | "unauthorized"
  | "not_found"
  | "payload_too_large"
  | "request_timeout"
  | "rate_limited"
  | "deadline_exceeded"
  | "unsupported"
  | "internal";

export type FieldPath = (string | number)[];

export interface ErrorBody {
  error: { code: ErrorCode; message: string; path?: FieldPath };
}

/** An error meant for the client: its status, code, message and (for bad input) field path. */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ErrorCode,
    message: string,
    readonly path?: FieldPath,
    /** Extra response headers, e.g. Retry-After on 429. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }

  body(): ErrorBody {
    return {
      error: { code: this.code, message: this.message, ...(this.path ? { path: this.path } : {}) },
    };
  }

  toResponse(): Response {
    return new Response(JSON.stringify(this.body()), {
      status: this.status,
      headers: { "content-type": "application/json; charset=utf-8", ...this.headers },
    });
  }
}

export const invalidRequest = (message: string, path: FieldPath = [], status: 400 | 422 = 400) =>
  new ApiError(status, "invalid_request", message, path);

/**
 * The first zod issue as an `invalid_request`, its path prefixed by where the value came from
 * (e.g. ["options", "maxTurns"] in the body, ["query", "ref"] for query strings). An unknown key's
 * path ends with the key itself, so "path" always names the field to fix.
 */
export function zodToApiError(error: z.ZodError, prefix: FieldPath = []): ApiError {
  const issue = error.issues[0];
  if (!issue) return invalidRequest("invalid request", prefix);
  const path: FieldPath = [...prefix, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "";
    return invalidRequest(`unknown field "${key}"${path.length ? ` in ${path.join(".")}` : ""}`, [
      ...path,
      key,
    ]);
  }
  const where = path.length ? path.join(".") : "body";
  return invalidRequest(`${where}: ${issue.message}`, path);
}
