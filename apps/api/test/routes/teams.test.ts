/**
 * GET /v1/teams and GET /v1/teams/{name} on a real registry in a temp FileStore: the list of
 * published teams (a corrupt one logged by name and left out), one manifest by ref, and the
 * errors naming the path or query field.
 */
import { createTeamRegistry, type TeamManifest, type TeamRegistry } from "@troupe/teams";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listTeamsRoutes } from "../../src/routes/teams.ts";
import { TeamListSchema } from "../../src/schemas.ts";
import { tempStore, tinyTeam } from "../fixtures.ts";
import { mounted } from "./routes-fixture.ts";

const tmp = tempStore();
let registry: TeamRegistry;
let v1: TeamManifest;
let v2: TeamManifest;

beforeAll(async () => {
  registry = createTeamRegistry(tmp.store);
  v1 = await registry.publish(await tinyTeam("tiny"));
  v2 = await registry.publish(await tinyTeam("tiny"));
  await registry.setAlias("tiny", "stable", 1);
  await registry.publish(await tinyTeam("other"));
}, 60_000);
afterAll(() => tmp.cleanup());

describe("GET /v1/teams", () => {
  it("lists every team with its versions, aliases and latest version's environment and roles", async () => {
    const { app, logged } = mounted(listTeamsRoutes({ registry, log: () => {} }));
    const res = await app.request("/v1/teams");
    expect(res.status).toBe(200);
    const body = TeamListSchema.parse(await res.json());
    expect(body.teams.map((t) => t.name).sort()).toEqual(["other", "tiny"]);
    expect(body.teams.find((t) => t.name === "tiny")).toEqual({
      name: "tiny",
      versions: [1, 2],
      aliases: { stable: 1 },
      latest: { version: 2, environment: v2.environment, roles: v2.roles },
    });
    expect(v1.version).toBe(1);
    expect(logged).toEqual([]);
  });

  it("a corrupt manifest: the other teams listed, the bad one logged by name with its error", async () => {
    const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
    const { app } = mounted(
      listTeamsRoutes({ registry, log: (level, message, fields) => logged.push({ level, message, fields }) }),
    );
    const key = "teams/broken/versions/00000001/manifest.json";
    await tmp.store.put(key, new TextEncoder().encode("{ not json"));
    const res = await Promise.resolve(app.request("/v1/teams")).finally(() => tmp.store.delete(key));
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
