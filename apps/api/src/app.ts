/**
 * `createApp`: the Troupe HTTP API as a Hono app — web-standard Request/Response only, so the same
 * app runs on Node (@hono/node-server, node.ts) and Cloudflare Workers (worker.ts).
 *
 * A request to /v1/* goes through, in order:
 *   deadline (starts at arrival) → auth (Bearer key → caller, 401) → rate limit (token bucket per
 *   key, 429 + Retry-After) → the body, read whole within the body limit (413) and the deadline
 *   (408) → zod validation of params/query/body (400 with the field path)
 *   → handler (404 unknown team, 422 invalid task or a prompt longer than the model's context,
 *   501 no sandbox, 504 past the deadline).
 * Every error leaves through one `onError` that writes { error: { code, message, path? } } and never a
 * stack trace; unexpected errors are logged server-side and answered `500 internal`.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { CodeRunner } from "@troupe/sandbox";
import {
  type InferenceBackend,
  needsSandbox,
  SolveAbortedError,
  SolveInputError,
  type SolveResult,
  solve,
  TeamNotFoundError,
  type TeamRegistry,
  type TurnEvent,
  UnsupportedTeamError,
} from "@troupe/teams";
import type { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { streamSSE } from "hono/streaming";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type Authenticator, type Caller, noAuth } from "./auth.ts";
import { readBodyWithin } from "./body.ts";
import {
  abortable,
  ClientGoneError,
  DeadlineExceededError,
  type RequestDeadline,
  requestDeadline,
} from "./deadline.ts";
import { renderDocsPage } from "./docs-page.ts";
import { ApiError, invalidRequest, zodToApiError } from "./errors.ts";
import { TokenBuckets } from "./rate-limit.ts";
import { getTeamRoute, healthRoute, listTeamsRoute, solveRoute } from "./routes.ts";
import type { SolveResponse } from "./schemas.ts";
import { solveArguments, solveResponse, splitTeamRef } from "./solve-request.ts";
import { TeamCache } from "./team-cache.ts";

export interface ApiLimits {
  /** Largest request body in bytes (413 above it). */
  readonly bodyBytes: number;
  /** Per-request deadline in ms, from arrival to the last byte of the answer (504 / SSE error after it). */
  readonly deadlineMs: number;
  /** Default requests per minute per key (a key's own `ratePerMinute` overrides it). */
  readonly ratePerMinute: number;
}

export const DEFAULT_LIMITS: ApiLimits = { bodyBytes: 64 * 1024, deadlineMs: 30_000, ratePerMinute: 600 };

/** solve() wraps the abort reason (deadline or client gone) in a SolveAbortedError. */
const unwrapAbort = (error: unknown) => (error instanceof SolveAbortedError ? error.reason : error);

/**
 * A SolveInputError's path → the request body's field path: solve() names input fields relative
 * to the input (["task", "payload", "grid"]) and sampling options as ["options", "sampling", x],
 * which in the HTTP body are ["input", "task", "payload", "grid"] and the flat ["options", x].
 */
export function bodyPath(path: readonly (string | number)[]): (string | number)[] {
  if (path[0] === "options") return path[1] === "sampling" ? ["options", ...path.slice(2)] : [...path];
  return ["input", ...path];
}

export type LogLevel = "info" | "warn" | "error";
export type Logger = (level: LogLevel, message: string, fields?: Record<string, unknown>) => void;

/** Server-side log lines as JSON on stderr (errors include their stack; clients never see it). */
export const consoleLogger: Logger = (level, message, fields = {}) => {
  console.error(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }));
};

export interface AppOptions {
  readonly registry: TeamRegistry;
  readonly backend: InferenceBackend;
  /** `keyAuth(keys)` from auth.ts, or `noAuth` (local development only). Default: noAuth. */
  readonly auth?: Authenticator;
  readonly limits?: Partial<ApiLimits>;
  /**
   * The sandbox that runs agents' code for code-executing environments (@troupe/teams
   * `needsSandbox`). Without one (`sandboxAvailable` false, the default) such teams get 501.
   */
  readonly sandbox?: CodeRunner;
  readonly sandboxAvailable?: boolean;
  /** Public routes mounted at "/" (the playground page); they take precedence over the fallback for "/". */
  readonly extraRoutes?: Hono;
  readonly log?: Logger;
  /** Loaded teams kept in memory (LRU). */
  readonly teamCacheSize?: number;
  /** How long a resolved name@ref is reused before asking the registry again. */
  readonly resolveTtlMs?: number;
  /** Clock for the rate limiter (tests). */
  readonly now?: () => number;
}

/** Counters for logs and benchmarks (not an endpoint). */
export interface ApiStats {
  requests: number;
  byStatus: Record<number, number>;
  /** Requests refused with 429. */
  rateLimited: number;
  solves: number;
  inFlightSolves: number;
  /** Solves aborted because the client went away (mostly SSE clients closing early). */
  clientAborts: number;
}

interface AppVariables {
  caller: Caller;
  /** The request's deadline, started when it arrived (see the first /v1/* middleware). */
  deadline: RequestDeadline;
  /** Set by a handler that answers with a stream: the stream disposes the deadline when it ends. */
  deadlineKept: boolean;
}

export type TroupeApp = OpenAPIHono<{ Variables: AppVariables }> & { readonly stats: ApiStats };

export function createApp(options: AppOptions): TroupeApp {
  const limits: ApiLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const auth = options.auth ?? noAuth;
  const log = options.log ?? consoleLogger;
  const sandboxAvailable = options.sandboxAvailable ?? options.sandbox !== undefined;
  const teams = new TeamCache(options.registry, options.backend, {
    ...(options.teamCacheSize !== undefined ? { capacity: options.teamCacheSize } : {}),
    ...(options.resolveTtlMs !== undefined ? { resolveTtlMs: options.resolveTtlMs } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.sandbox ? { runner: options.sandbox } : {}),
  });
  const buckets = new TokenBuckets(options.now);
  const stats: ApiStats = {
    requests: 0,
    byStatus: {},
    rateLimited: 0,
    solves: 0,
    inFlightSolves: 0,
    clientAborts: 0,
  };

  const app = new OpenAPIHono<{ Variables: AppVariables }>({
    // Validation failures of params, query and body: 400 naming the field.
    defaultHook: (result) => {
      if (!result.success) {
        const where = result.target === "query" ? ["query"] : result.target === "param" ? ["path"] : [];
        throw zodToApiError(result.error, where);
      }
    },
  });

  /** Any thrown value → the client's error. Unknown errors are logged with their stack, answered 500. */
  const toApiError = (error: unknown, method: string, path: string): ApiError => {
    if (error instanceof ApiError) return error;
    if (error instanceof SolveAbortedError) return toApiError(error.reason, method, path);
    if (error instanceof DeadlineExceededError) return new ApiError(504, "deadline_exceeded", error.message);
    // Nobody is left to read this answer; 499 (nginx's "client closed request") keeps it apart from real errors.
    if (error instanceof ClientGoneError)
      return new ApiError(499 as ContentfulStatusCode, "invalid_request", error.message);
    if (error instanceof UnsupportedTeamError)
      return new ApiError(501, "unsupported", error.message, ["team"]);
    if (error instanceof TeamNotFoundError) return new ApiError(404, "not_found", error.message);
    if (error instanceof SolveInputError)
      return new ApiError(422, "invalid_request", error.message, bodyPath(error.path));
    if (error instanceof HTTPException) {
      if (error.status === 413)
        return new ApiError(413, "payload_too_large", `the body is larger than ${limits.bodyBytes} bytes`);
      if (error.status === 415)
        return new ApiError(415, "invalid_request", "the body must be application/json", [
          "headers",
          "content-type",
        ]);
      if (error.status === 400) return invalidRequest(error.message || "bad request");
    }
    log("error", "unhandled error", {
      method,
      path,
      error:
        error instanceof Error
          ? { name: error.name, message: error.message, stack: error.stack }
          : String(error),
    });
    return new ApiError(500, "internal", "internal server error");
  };

  app.onError((error, c) => toApiError(error, c.req.method, c.req.path).toResponse());
  app.notFound((c) => new ApiError(404, "not_found", `no route ${c.req.method} ${c.req.path}`).toResponse());

  // Counting (every request, whatever its route).
  app.use("*", async (c, next) => {
    stats.requests += 1;
    await next();
    stats.byStatus[c.res.status] = (stats.byStatus[c.res.status] ?? 0) + 1;
  });

  // /v1/*: the deadline first, so that it counts from the request's arrival (body upload included).
  app.use("/v1/*", async (c, next) => {
    const deadline = requestDeadline(limits.deadlineMs, c.req.raw.signal);
    c.set("deadline", deadline);
    try {
      await next();
    } finally {
      if (c.get("deadlineKept") !== true) deadline.dispose();
    }
  });

  // Then auth, the caller's rate, and the body: read whole, within its size limit and the deadline.
  app.use("/v1/*", async (c, next) => {
    const caller = await auth.authenticate(c.req.header("authorization"));
    const rate = caller.ratePerMinute ?? limits.ratePerMinute;
    const decision = buckets.take(caller.id, rate);
    c.header("RateLimit-Limit", String(rate));
    c.header("RateLimit-Remaining", String(decision.remaining));
    if (!decision.allowed) {
      stats.rateLimited += 1;
      throw new ApiError(
        429,
        "rate_limited",
        `over ${rate} requests per minute for key "${caller.id}"; retry in ${decision.retryAfterSeconds} s`,
        undefined,
        {
          "retry-after": String(decision.retryAfterSeconds),
          "ratelimit-limit": String(rate),
          "ratelimit-remaining": "0",
        },
      );
    }
    c.set("caller", caller);
    await next();
  });
  app.use("/v1/*", async (c, next) => {
    const body = await readBodyWithin(c.req.raw, limits.bodyBytes, c.get("deadline").signal);
    if (body !== null) c.req.raw = new Request(c.req.raw, { body });
    await next();
  });

  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "An API key; the server stores only its sha256.",
  });

  app.openapi(healthRoute, (c) => c.json({ ok: true as const }, 200));

  app.openapi(listTeamsRoute, async (c) => {
    // One corrupt team is logged and left out instead of failing the whole list.
    const summaries = await options.registry.list({
      onUnreadable: (team, error) =>
        log("error", "team left out of /v1/teams: unreadable", {
          team,
          error: { name: error.name, message: error.message, stack: error.stack },
        }),
    });
    return c.json(
      {
        teams: summaries.map((s) => ({
          name: s.name,
          versions: s.versions,
          aliases: s.aliases,
          latest: {
            version: s.latest.version,
            environment: s.latest.environment,
            roles: s.latest.roles,
            ...(s.latest.eval ? { eval: s.latest.eval } : {}),
          },
        })),
      },
      200,
    );
  });

  app.openapi(getTeamRoute, async (c) => {
    const { name } = c.req.valid("param");
    const { ref } = c.req.valid("query");
    try {
      return c.json(await options.registry.resolve(name, ref ?? "latest"), 200);
    } catch (error) {
      if (error instanceof TeamNotFoundError)
        throw new ApiError(404, "not_found", error.message, ["path", "name"]);
      throw error;
    }
  });

  app.openapi(solveRoute, async (c) => {
    const body = c.req.valid("json");
    // Started when the request arrived; the first /v1/* middleware disposes it (a stream: below).
    const deadline = c.get("deadline");
    const { signal } = deadline;
    const { name, ref } = splitTeamRef(body.team);
    const manifest = await abortable(teams.resolve(name, ref), signal).catch((error) => {
      if (error instanceof TeamNotFoundError) throw new ApiError(404, "not_found", error.message, ["team"]);
      throw error;
    });
    if (needsSandbox(manifest.environment) && !sandboxAvailable) {
      throw new ApiError(
        501,
        "unsupported",
        `team "${manifest.name}" runs model-written code (environment ${manifest.environment.name}) and this server has no sandbox`,
        ["team"],
      );
    }
    const team = await abortable(teams.load(manifest), signal);
    const { input, solveOptions } = solveArguments(body, signal);
    const teamRef = { name: team.manifest.name, version: team.manifest.version };
    const transcript = body.options?.transcript ?? true;

    if (body.options?.stream !== true) {
      stats.solves += 1;
      stats.inFlightSolves += 1;
      try {
        const result = await abortable(solve(team, input, solveOptions), signal);
        return c.json(solveResponse(teamRef, result, transcript), 200);
      } catch (error) {
        if (unwrapAbort(error) instanceof ClientGoneError) stats.clientAborts += 1;
        throw error;
      } finally {
        stats.inFlightSolves -= 1;
      }
    }

    // Streaming: errors from here on are `event: error` (the 200 status is already sent).
    c.set("deadlineKept", true);
    return streamSSE(c, async (stream) => {
      stats.solves += 1;
      stats.inFlightSolves += 1;
      stream.onAbort(() => deadline.clientGone());
      // Turns arrive through a synchronous callback; writes are chained so events keep their order.
      let writes: Promise<void> = Promise.resolve();
      const onTurn = (event: TurnEvent) => {
        writes = writes.then(() => stream.writeSSE({ event: "turn", data: JSON.stringify(event) }));
      };
      try {
        const result: SolveResult = await abortable(solve(team, input, solveOptions, onTurn), signal);
        await writes;
        const { turns: _turns, ...withoutTurns }: SolveResponse = solveResponse(teamRef, result, false);
        await stream.writeSSE({ event: "result", data: JSON.stringify(withoutTurns) });
      } catch (error) {
        if (unwrapAbort(error) instanceof ClientGoneError || stream.aborted) {
          stats.clientAborts += 1;
          return;
        }
        await writes.catch(() => {});
        await stream.writeSSE({
          event: "error",
          data: JSON.stringify(toApiError(error, c.req.method, c.req.path).body()),
        });
      } finally {
        stats.inFlightSolves -= 1;
        deadline.dispose();
      }
    }) as unknown as ReturnType<typeof c.json<SolveResponse, 200>>;
  });

  const info = {
    title: "Troupe API",
    version: "1",
    description:
      "Serve trained teams of collaborating LLM agents. Authenticate /v1/* with `Authorization: Bearer <key>`. " +
      "Errors are { error: { code, message, path? } }.",
  };
  app.doc31("/openapi.json", { openapi: "3.1.0", info });
  let docsHtml: string | undefined;
  app.get("/docs", (c) => {
    docsHtml ??= renderDocsPage(app.getOpenAPI31Document({ openapi: "3.1.0", info }));
    return c.html(docsHtml);
  });

  if (options.extraRoutes) app.route("/", options.extraRoutes);
  app.get("/", (c) => c.redirect("/docs"));

  return Object.assign(app, { stats });
}
