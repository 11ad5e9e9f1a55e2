/**
 * What every route module shares: a router whose failed validation of path, query or body is one
 * 400 `invalid_request` naming the field (under "path", "query", or the body's own path), and the
 * error answers declared in the OpenAPI document.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { AUTHENTICATED_ERRORS, bearer, errorResponse, router } from "../../src/routes/common.ts";
import { ErrorSchema } from "../../src/schemas.ts";
import { mounted } from "./routes-fixture.ts";

const echoRoute = createRoute({
  method: "post",
  path: "/echo/{id}",
  request: {
    params: z.object({ id: z.string().regex(/^[a-z]+$/) }),
    query: z.strictObject({ n: z.coerce.number().int().optional() }),
    body: { content: { "application/json": { schema: z.strictObject({ text: z.string() }) } } },
  },
  responses: { 200: { description: "echo", content: { "application/json": { schema: z.object({}) } } } },
});
const echo = router().openapi(echoRoute, (c) =>
  c.json({ id: c.req.valid("param").id, ...c.req.valid("query"), ...c.req.valid("json") }, 200),
);
const post = (path: string, body: unknown) =>
  mounted(echo).app.request(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("router", () => {
  it("passes valid requests through", async () => {
    const res = await post("/echo/abc?n=3", { text: "hi" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: "abc", n: 3, text: "hi" });
  });

  it("a bad path parameter, query or body field, or an unknown field: 400 invalid_request naming it", async () => {
    const cases: [string, unknown, (string | number)[]][] = [
      ["/echo/ABC", { text: "hi" }, ["path", "id"]],
      ["/echo/abc?n=x", { text: "hi" }, ["query", "n"]],
      ["/echo/abc", { text: 3 }, ["text"]],
      ["/echo/abc", { text: "hi", extra: 1 }, ["extra"]],
    ];
    for (const [path, body, field] of cases) {
      const res = await post(path, body);
      expect(res.status, path).toBe(400);
      const error = ErrorSchema.parse(await res.json()).error;
      expect(error.code, path).toBe("invalid_request");
      expect(error.path ?? [], path).toEqual(field);
    }
  });

  it("declares the errors every authenticated route answers, each with the error schema, and bearer security", () => {
    expect(Object.keys(AUTHENTICATED_ERRORS).sort()).toEqual(["401", "429", "500"]);
    expect(errorResponse("`x`: why")).toEqual({
      description: "`x`: why",
      content: { "application/json": { schema: ErrorSchema } },
    });
    expect(AUTHENTICATED_ERRORS[429].description).toMatch(/^`rate_limited`/);
    expect(bearer).toEqual([{ bearer: [] }]);
  });
});
