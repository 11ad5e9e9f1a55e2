/**
 * GET /v1/teams/{name} on a real registry in a temp FileStore: the manifest of the latest version
 * or of `?ref=` (alias, vN, N); 404 naming the path's name for an unknown team, version or alias;
 * 400 naming the field for a malformed name or ref.
 */
import { describe, expect, it } from "vitest";
import { getTeamRoutes } from "../../src/routes/team.ts";
import { ErrorSchema, TeamManifestResponseSchema } from "../../src/schemas.ts";
import { mounted, tinyRegistry } from "./routes-fixture.ts";

const tiny = tinyRegistry();

const get = (path: string) => mounted(getTeamRoutes({ registry: tiny.registry })).app.request(path);

describe("GET /v1/teams/{name}", () => {
  it("the latest version's manifest, or the one `?ref=` names", async () => {
    for (const [query, manifest] of [
      ["", () => tiny.v2],
      ["?ref=latest", () => tiny.v2],
      ["?ref=stable", () => tiny.v1],
      ["?ref=v1", () => tiny.v1],
      ["?ref=2", () => tiny.v2],
    ] as const) {
      const res = await get(`/v1/teams/tiny${query}`);
      expect(res.status, query).toBe(200);
      const body = await res.json();
      expect(body, query).toEqual(manifest());
      expect(TeamManifestResponseSchema.parse(body), query).toEqual(body);
    }
  });

  it("404 not_found at [path, name] for an unknown team, version or alias", async () => {
    for (const path of ["/v1/teams/nope", "/v1/teams/tiny?ref=v9", "/v1/teams/tiny?ref=canary"]) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(ErrorSchema.parse(await res.json()).error, path).toMatchObject({
        code: "not_found",
        path: ["path", "name"],
      });
    }
  });

  it("400 invalid_request naming the malformed name or ref", async () => {
    const badRef = await get("/v1/teams/tiny?ref=../x");
    expect(badRef.status).toBe(400);
    expect((await badRef.json()).error).toMatchObject({ code: "invalid_request", path: ["query", "ref"] });
    const badName = await get("/v1/teams/Tiny_");
    expect(badName.status).toBe(400);
    expect((await badName.json()).error).toMatchObject({ code: "invalid_request", path: ["path", "name"] });
    const unknownQuery = await get("/v1/teams/tiny?version=1");
    expect(unknownQuery.status).toBe(400);
    expect((await unknownQuery.json()).error.code).toBe("invalid_request");
  });
});
