/** GET /healthz: liveness and the server's counters, public. */
import { createRoute } from "@hono/zod-openapi";
import type { ServerStats } from "../context.ts";
import { HealthSchema } from "../schemas.ts";
import { errorResponse, router } from "./common.ts";

export const healthRoute = createRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  summary: "Liveness and the server's counters",
  description:
    "Public (no key). On Node, `stats` sums every process of the server (with `--workers`, the primary " +
    "asks each worker): requests, solves, and CPU time with ONNX Runtime's share.",
  security: [],
  responses: {
    200: { description: "The server is up.", content: { "application/json": { schema: HealthSchema } } },
    500: errorResponse("`internal`: an unexpected server error (details are in the server log only)"),
  },
});

/** `stats`: the whole server's counters, when the runtime has them (the Node server). */
export function healthRoutes(stats?: () => ServerStats | Promise<ServerStats>) {
  return router().openapi(healthRoute, async (c) =>
    c.json(stats ? { ok: true as const, stats: await stats() } : { ok: true as const }, 200),
  );
}
