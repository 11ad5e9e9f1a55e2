/** The server's cache of published teams: resolved refs for a TTL, loaded versions least recently used first. */
import { createTeamRegistry, TeamNotFoundError } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TeamCache } from "../src/team-cache.ts";
import { tempStore, tinyTeam } from "./fixtures.ts";

const tmp = tempStore();
const registry = createTeamRegistry(tmp.store);
const backend = createOnnxBackend();
beforeAll(async () => {
  const input = await tinyTeam("cached");
  await registry.publish(input);
  await registry.publish(input);
  await registry.setAlias("cached", "stable", 1);
}, 60_000);
afterAll(async () => {
  await backend.close();
  tmp.cleanup();
});

describe("TeamCache", () => {
  it("a resolved ref is remembered for resolveTtlMs: a moved alias is seen once it expires", async () => {
    let now = 0;
    const teams = new TeamCache(registry, backend, { resolveTtlMs: 1000, now: () => now });
    expect((await teams.resolve("cached", "stable")).version).toBe(1);
    await registry.setAlias("cached", "stable", 2);
    now = 999;
    expect((await teams.resolve("cached", "stable")).version).toBe(1);
    now = 1000;
    expect((await teams.resolve("cached", "stable")).version).toBe(2);
  });

  it("an unknown team is not remembered: it is looked up again", async () => {
    const teams = new TeamCache(registry, backend);
    await expect(teams.resolve("later")).rejects.toThrow(TeamNotFoundError);
    await registry.publish(await tinyTeam("later"));
    expect((await teams.resolve("later")).version).toBe(1);
  });

  it("one load per version, shared by concurrent requests; beyond capacity the least recently used goes", async () => {
    const teams = new TeamCache(registry, backend, { capacity: 1 });
    const [v1, v2] = [await registry.resolve("cached", "1"), await registry.resolve("cached", "2")];
    const first = teams.load(v1);
    expect(teams.load(v1)).toBe(first);
    expect((await first).manifest.version).toBe(1);
    await teams.load(v2); // v1 dropped
    expect(teams.load(v1)).not.toBe(first);
  });
});
