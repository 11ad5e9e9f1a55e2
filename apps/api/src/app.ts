/**
 * `createApp`: the Troupe HTTP API as a Hono app — web-standard Request/Response only, so the same
 * app runs on Node (@hono/node-server, node.ts) and Cloudflare Workers (worker.ts).
 *
 * It is composed of small middleware and one route module per endpoint. A request to /v1/* goes
 * through, in order:
 *   withDeadline (starts at arrival, deadline.ts) → authenticate (Bearer key → caller, 401, auth.ts)
 *   → rateLimit (token bucket per key, 429 + Retry-After, rate-limit.ts) → bufferedBody (read whole
 *   within the body limit 413 and the deadline 408, body.ts) → the route: zod validation of
 *   params/query/body (400 with the field path) → handler (routes/*: 404 unknown team, 422 invalid
 *   task or a prompt longer than the model's context, 501 no sandbox, 504 past the deadline).
 * Everything thrown leaves through the one `onError` (errors.ts), which writes
 * { error: { code, message, path? } } and never a stack trace; unexpected errors are logged
 * server-side and answered `500 internal`.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { CodeRunner } from "@troupe/sandbox";
import type { InferenceBackend, TeamRegistry } from "@troupe/teams";
import type { Hono } from "hono";
import { type Authenticator, authenticate, noAuth } from "./auth.ts";
import { bufferedBody } from "./body.ts";
import {
  type ApiLimits,
  type ApiStats,
  consoleLogger,
  DEFAULT_LIMITS,
  type Logger,
  newStats,
  type ServerStats,
} from "./context.ts";
import { withDeadline } from "./deadline.ts";
import { renderDocsPage } from "./docs-page.ts";
import { ApiError, type ErrorMapping, errorHandler } from "./errors.ts";
import { type RateLimiter, rateLimit, TokenBuckets } from "./rate-limit.ts";
import { healthRoutes } from "./routes/health.ts";
import { solveRoutes } from "./routes/solve.ts";
import { getTeamRoutes } from "./routes/team.ts";
import { listTeamsRoutes } from "./routes/teams.ts";
import { TeamCache } from "./team-cache.ts";

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
  /** Where the per-key rate buckets live (default: this process's own `TokenBuckets`). */
  readonly rateLimiter?: RateLimiter;
  /**
   * The whole server's stats for /healthz (node.ts: this process's, or a cluster's sum). Without
   * it /healthz answers only `ok`.
   */
  readonly serverStats?: (local: ApiStats) => ServerStats | Promise<ServerStats>;
}

export type TroupeApp = OpenAPIHono & { readonly stats: ApiStats };

export function createApp(options: AppOptions): TroupeApp {
  const limits: ApiLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const log = options.log ?? consoleLogger;
  const teams = new TeamCache(options.registry, options.backend, {
    ...(options.teamCacheSize !== undefined ? { capacity: options.teamCacheSize } : {}),
    ...(options.resolveTtlMs !== undefined ? { resolveTtlMs: options.resolveTtlMs } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.sandbox ? { runner: options.sandbox } : {}),
  });
  const stats = newStats();
  const errors: ErrorMapping = { bodyBytes: limits.bodyBytes, log };

  const app = new OpenAPIHono();
  app.onError(errorHandler(errors));
  app.notFound((c) => new ApiError(404, "not_found", `no route ${c.req.method} ${c.req.path}`).toResponse());

  // Counting (every request, whatever its route).
  app.use("*", async (c, next) => {
    stats.requests += 1;
    await next();
    stats.byStatus[c.res.status] = (stats.byStatus[c.res.status] ?? 0) + 1;
  });
  app.use("/v1/*", withDeadline(limits.deadlineMs));
  app.use("/v1/*", authenticate(options.auth ?? noAuth));
  app.use(
    "/v1/*",
    rateLimit({
      buckets: options.rateLimiter ?? new TokenBuckets(options.now),
      ratePerMinute: limits.ratePerMinute,
      onRefused: () => {
        stats.rateLimited += 1;
      },
    }),
  );
  app.use("/v1/*", bufferedBody(limits.bodyBytes));

  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "An API key; the server stores only its sha256.",
  });
  const serverStats = options.serverStats;
  app.route("/", healthRoutes(serverStats && (() => serverStats(stats))));
  app.route("/", listTeamsRoutes({ registry: options.registry, log }));
  app.route("/", getTeamRoutes({ registry: options.registry }));
  app.route(
    "/",
    solveRoutes({
      teams,
      sandboxAvailable: options.sandboxAvailable ?? options.sandbox !== undefined,
      stats,
      errors,
    }),
  );

  // The reference: /openapi.json and its page, generated from the route modules' definitions.
  const info = {
    title: "Troupe API",
    version: "1",
    description:
      "Serve trained teams of collaborating LLM agents. Authenticate /v1/* with `Authorization: Bearer <key>`. " +
      "Errors are { error: { code, message, path? } }.",
    license: { name: "MIT", identifier: "MIT" },
  };
  // The server is the one answering: a client generated from the document calls where it came from.
  const document = (origin: string) => ({
    openapi: "3.1.0",
    info,
    servers: [{ url: origin, description: "This server" }],
  });
  app.doc31("/openapi.json", (c) => document(new URL(c.req.url).origin));
  const docsHtml = new Map<string, string>();
  app.get("/docs", (c) => {
    const origin = new URL(c.req.url).origin;
    let html = docsHtml.get(origin);
    if (html === undefined) {
      html = renderDocsPage(app.getOpenAPI31Document(document(origin)));
      if (docsHtml.size < 16) docsHtml.set(origin, html); // a few names of one server
    }
    return c.html(html);
  });

  if (options.extraRoutes) app.route("/", options.extraRoutes);
  app.get("/", (c) => c.redirect("/docs"));

  return Object.assign(app, { stats });
}
