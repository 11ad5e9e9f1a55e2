/** GET /v1/teams: the published teams. */
import { createRoute } from "@hono/zod-openapi";
import type { TeamRegistry } from "@troupe/teams";
import type { Logger } from "../context.ts";
import { TeamListSchema } from "../schemas.ts";
import { AUTHENTICATED_ERRORS, bearer, router } from "./common.ts";

export const listTeamsRoute = createRoute({
  method: "get",
  path: "/v1/teams",
  operationId: "listTeams",
  summary: "Published teams",
  description:
    "Every published team: its versions, aliases, and its latest version's environment, roles and eval.",
  security: bearer,
  responses: {
    200: { description: "The teams.", content: { "application/json": { schema: TeamListSchema } } },
    ...AUTHENTICATED_ERRORS,
  },
});

export function listTeamsRoutes(deps: { registry: TeamRegistry; log: Logger }) {
  return router().openapi(listTeamsRoute, async (c) => {
    // One corrupt team is logged and left out instead of failing the whole list.
    const summaries = await deps.registry.list({
      onUnreadable: (team, error) =>
        deps.log("error", "team left out of /v1/teams: unreadable", {
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
}
