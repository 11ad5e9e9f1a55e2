/** GET /v1/teams/{name}: one team's manifest, at the latest version or `?ref=`. */
import { createRoute, z } from "@hono/zod-openapi";
import { TeamNotFoundError, type TeamRegistry } from "@troupe/teams";
import { ApiError } from "../errors.ts";
import { TeamManifestResponseSchema, TeamNameParam, TeamRefQuery } from "../schemas.ts";
import { AUTHENTICATED_ERRORS, bearer, errorResponse, router } from "./common.ts";

export const getTeamRoute = createRoute({
  method: "get",
  path: "/v1/teams/{name}",
  operationId: "getTeam",
  summary: "One team's manifest",
  description: "The manifest of the team's latest version, or of `?ref=` (an alias such as stable, v3 or 3).",
  security: bearer,
  request: { params: z.object({ name: TeamNameParam }), query: TeamRefQuery },
  responses: {
    200: {
      description: "The manifest.",
      content: { "application/json": { schema: TeamManifestResponseSchema } },
    },
    400: errorResponse("`invalid_request`: a malformed name or ref (path names it)"),
    404: errorResponse("`not_found`: no such team, alias or version"),
    ...AUTHENTICATED_ERRORS,
  },
});

export function getTeamRoutes(deps: { registry: TeamRegistry }) {
  return router().openapi(getTeamRoute, async (c) => {
    const { name } = c.req.valid("param");
    const { ref } = c.req.valid("query");
    try {
      return c.json(await deps.registry.resolve(name, ref ?? "latest"), 200);
    } catch (error) {
      if (error instanceof TeamNotFoundError)
        throw new ApiError(404, "not_found", error.message, ["path", "name"]);
      throw error;
    }
  });
}
