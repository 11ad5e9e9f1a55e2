/** GET /healthz: liveness, public. */
import { createRoute } from "@hono/zod-openapi";
import { HealthSchema } from "../schemas.ts";
import { router } from "./common.ts";

export const healthRoute = createRoute({
  method: "get",
  path: "/healthz",
  summary: "Liveness",
  responses: {
    200: { description: "The server is up.", content: { "application/json": { schema: HealthSchema } } },
  },
});

export function healthRoutes() {
  return router().openapi(healthRoute, (c) => c.json({ ok: true as const }, 200));
}
