/**
 * The server's one cache of published teams: resolved refs for a TTL, loaded versions least recently
 * used first, each unloaded from the backend once dropped and released by every request holding it.
 */
import { samplingParams, userObservation } from "@troupe/core";
import { createTeamRegistry, TeamNotFoundError } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
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
    const own = createOnnxBackend();
    const teams = new TeamCache(registry, own, { capacity: 1 });
    const [v1, v2] = [await registry.resolve("cached", "1"), await registry.resolve("cached", "2")];
    const [a, b] = await Promise.all([teams.acquire(v1), teams.acquire(v1)]);
    expect(a.team).toBe(b.team);
    expect(a.team.manifest.version).toBe(1);
    expect(own.stats()).toMatchObject({ loads: 2, loaded: ["cached@1/planner", "cached@1/fixer"] });
    a.release();
    b.release();
    const c = await teams.acquire(v2); // v1 dropped, and nobody holds it: unloaded
    expect(teams.keys()).toEqual(["cached@2"]);
    await vi.waitFor(() => expect(own.stats().loaded).toEqual(["cached@2/planner", "cached@2/fixer"]));
    c.release();
    const d = await teams.acquire(v1);
    expect(d.team).not.toBe(a.team); // loaded afresh
    expect(own.stats().loads).toBe(6);
    d.release();
    await own.close();
  });

  it("a dropped team stays loaded while a request holds it, and is unloaded at its release", async () => {
    const own = createOnnxBackend();
    const teams = new TeamCache(registry, own, { capacity: 0 }); // nothing kept between requests
    const v1 = await registry.resolve("cached", "1");
    const lease = await teams.acquire(v1);
    expect(teams.keys()).toEqual([]);
    const [completion] = await lease.team.policies.planner!.generate(
      [{ observation: userObservation("go"), seed: 1 }],
      samplingParams({ maxTokens: 2 }),
    );
    expect(completion!.tokenIds.length).toBeGreaterThan(0);
    lease.release();
    lease.release(); // once only: a second release changes nothing
    await vi.waitFor(() => expect(own.stats().loaded).toEqual([]));
    await own.close();
  });

  it("a request aborted while its team loads holds nothing; the load goes on for the next", async () => {
    const own = createOnnxBackend();
    const teams = new TeamCache(registry, own, { capacity: 0 });
    const v2 = await registry.resolve("cached", "2");
    const abort = new AbortController();
    const waiting = teams.acquire(v2, abort.signal);
    abort.abort(new Error("client gone"));
    await expect(waiting).rejects.toThrow("client gone");
    // The load finishes, and with nobody holding the dropped team it is unloaded.
    await vi.waitFor(() => expect(own.stats().loads).toBe(2));
    await vi.waitFor(() => expect(own.stats().loaded).toEqual([]));
    await own.close();
  });
});
