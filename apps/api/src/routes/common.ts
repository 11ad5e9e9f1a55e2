/**
 * What every route module shares: a router whose request validation fails as a 400 naming the
 * field, and the error answers in the OpenAPI document.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import { zodToApiError } from "../errors.ts";
import { ErrorSchema } from "../schemas.ts";

/** A router for one endpoint; mounted with `app.route("/", router)`. */
export function router(): OpenAPIHono {
  return new OpenAPIHono({
    // Validation failures of params, query and body: 400 naming the field (thrown to onError).
    defaultHook: (result) => {
      if (!result.success) {
        const where = result.target === "query" ? ["query"] : result.target === "param" ? ["path"] : [];
        throw zodToApiError(result.error, where);
      }
    },
  });
}

export const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorSchema } },
});

/** The errors every authenticated route can answer. */
export const AUTHENTICATED_ERRORS = {
  401: errorResponse("`unauthorized`: missing or unknown API key"),
  429: errorResponse("`rate_limited`: over the key's rate; retry after the Retry-After header's seconds"),
  500: errorResponse("`internal`: an unexpected server error (details are in the server log only)"),
} as const;

export const bearer = [{ bearer: [] }];
