/**
 * The API's one error format:  { error: { code, message, path? } }
 *
 * Every failure a client can cause maps to a machine-readable `code` and an HTTP status; `path` is
 * the field path of the offending input (JSON body fields, query or path parameters), so a client
 * can point at the exact field. Anything unexpected becomes a 500 `internal` whose message says
 * nothing about the server's internals (no stack, no file names): the details go to the log.
 *
 * Handlers and middleware throw; `errorHandler` is the app's one `onError`, and `toApiError` the
 * one mapping from what was thrown to what the client reads (also for a stream's `error` event).
 */
import {
  BackendOverloadedError,
  SolveAbortedError,
  SolveInputError,
  TeamNotFoundError,
  UnsupportedTeamError,
} from "@troupe/teams";
import type { ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";
import type { Logger } from "./context.ts";
import { ClientGoneError, DeadlineExceededError } from "./deadline.ts";
import type { ErrorSchema } from "./schemas.ts";

/** The wire body, as the OpenAPI document declares it (schemas.ts `ErrorSchema`). */
export type ErrorBody = z.infer<typeof ErrorSchema>;

/** The wire codes; `invalid_request` is 400 (malformed) or 422 (well-formed but not valid for the team). */
export type ErrorCode = ErrorBody["error"]["code"];

export type FieldPath = (string | number)[];

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

/**
 * A SolveInputError's path → the request body's field path: solve() names input fields relative
 * to the input (["task", "payload", "grid"]) and sampling options as ["options", "sampling", x],
 * which in the HTTP body are ["input", "task", "payload", "grid"] and the flat ["options", x].
 */
export function bodyPath(path: readonly (string | number)[]): (string | number)[] {
  if (path[0] === "options") return path[1] === "sampling" ? ["options", ...path.slice(2)] : [...path];
  return ["input", ...path];
}

export interface ErrorMapping {
  /** The body limit, named in a 413's message. */
  readonly bodyBytes: number;
  readonly log: Logger;
}

/** Any thrown value → the client's error. Unknown errors are logged with their stack and answered 500. */
export function toApiError(
  error: unknown,
  mapping: ErrorMapping,
  request: { method: string; path: string },
): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof SolveAbortedError) return toApiError(error.reason, mapping, request);
  if (error instanceof DeadlineExceededError) return new ApiError(504, "deadline_exceeded", error.message);
  // Nobody is left to read this answer; 499 (nginx's "client closed request") keeps it apart from real errors.
  if (error instanceof ClientGoneError)
    return new ApiError(499 as ContentfulStatusCode, "invalid_request", error.message);
  // The backend's bounded queue is full: the server is busy, not broken; the client retries.
  if (error instanceof BackendOverloadedError)
    return new ApiError(503, "overloaded", error.message, undefined, {
      "retry-after": String(error.retryAfterSeconds),
    });
  if (error instanceof UnsupportedTeamError) return new ApiError(501, "unsupported", error.message, ["team"]);
  if (error instanceof TeamNotFoundError) return new ApiError(404, "not_found", error.message);
  if (error instanceof SolveInputError)
    return new ApiError(422, "invalid_request", error.message, bodyPath(error.path));
  if (error instanceof HTTPException) {
    if (error.status === 413)
      return new ApiError(413, "payload_too_large", `the body is larger than ${mapping.bodyBytes} bytes`);
    if (error.status === 415)
      return new ApiError(415, "invalid_request", "the body must be application/json", [
        "headers",
        "content-type",
      ]);
    if (error.status === 400) return invalidRequest(error.message || "bad request");
  }
  mapping.log("error", "unhandled error", {
    method: request.method,
    path: request.path,
    error:
      error instanceof Error
        ? { name: error.name, message: error.message, stack: error.stack }
        : String(error),
  });
  return new ApiError(500, "internal", "internal server error");
}

/** The app's `onError`: every error of every route and middleware leaves through here. */
export function errorHandler(mapping: ErrorMapping): ErrorHandler {
  return (error, c) => toApiError(error, mapping, { method: c.req.method, path: c.req.path }).toResponse();
}
