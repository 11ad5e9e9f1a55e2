/**
 * GET /v1/teams and GET /v1/teams/{name} on a real registry in a temp FileStore: the list of
 * published teams (a corrupt one logged by name and left out), one manifest by ref, and the
 * errors naming the path or query field.
 */
import { describe, expect, it } from "vitest";
import { listTeamsRoutes } from "../../src/routes/teams.ts";
import { TeamListSchema } from "../../src/schemas.ts";
import { tinyTeam } from "../fixtures.ts";
import { mounted, tinyRegistry } from "./routes-fixture.ts";

const tiny = tinyRegistry(async (registry) => registry.publish(await tinyTeam("other")));

describe("GET /v1/teams", () => {
  it("lists every team with its versions, aliases and latest version's environment and roles", async () => {
    const { app, logged } = mounted(listTeamsRoutes({ registry: tiny.registry, log: () => {} }));
    const res = await app.request("/v1/teams");
    expect(res.status).toBe(200);
    const body = TeamListSchema.parse(await res.json());
    expect(body.teams.map((t) => t.name).sort()).toEqual(["other", "tiny"]);
    expect(body.teams.find((t) => t.name === "tiny")).toEqual({
      name: "tiny",
      versions: [1, 2],
      aliases: { stable: 1 },
      latest: { version: 2, environment: tiny.v2.environment, roles: tiny.v2.roles },
    });
    expect(tiny.v1.version).toBe(1);
    expect(logged).toEqual([]);
  });

  it("a corrupt manifest: the other teams listed, the bad one logged by name with its error", async () => {
    const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
    const { app } = mounted(
      listTeamsRoutes({
        registry: tiny.registry,
        log: (level, message, fields) => logged.push({ level, message, fields }),
      }),
    );
    const key = "teams/broken/versions/00000001/manifest.json";
    await tiny.store.put(key, new TextEncoder().encode("{ not json"));
    const res = await Promise.resolve(app.request("/v1/teams")).finally(() => tiny.store.delete(key));
    expect(res.status).toBe(200);
    expect(
      TeamListSchema.parse(await res.json())
        .teams.map((t) => t.name)
        .sort(),
    ).toEqual(["other", "tiny"]);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({
      level: "error",
      message: "team left out of /v1/teams: unreadable",
      fields: { team: "broken", error: { name: "ManifestError" } },
    });
  });
});
