import { IntegrityError } from "@troupe/storage";
import { describe, expect, it } from "vitest";
import { claimKey, manifestKey } from "../src/layout.ts";
import { publishTeam } from "../src/publish.ts";
import { checkName, readManifest, TeamNotFoundError, versionsOf } from "../src/versions.ts";
import { registryFixture } from "./registry-fixture.ts";

const fx = registryFixture();

describe("a team's versions in the store", () => {
  it("a claimed version without a manifest is taken but not published", async () => {
    await publishTeam(fx.store, { ...fx.input, name: "claims" });
    // A publisher that died after claiming v2.
    await fx.store.put(claimKey("claims", 2), new TextEncoder().encode("{}"));
    expect(await versionsOf(fx.store, "claims")).toEqual({ published: [1], highestTaken: 2 });
    expect((await publishTeam(fx.store, { ...fx.input, name: "claims" })).version).toBe(3);
    expect(await versionsOf(fx.store, "claims")).toEqual({ published: [1, 3], highestTaken: 3 });
    expect(await versionsOf(fx.store, "nobody")).toEqual({ published: [], highestTaken: 0 });
  });

  it("readManifest: a missing version names the team; a manifest under another version's key is an integrity error", async () => {
    await publishTeam(fx.store, { ...fx.input, name: "moved" });
    await expect(readManifest(fx.store, "moved", 2)).rejects.toThrow(
      new TeamNotFoundError('team "moved" has no version 2'),
    );
    await fx.store.put(manifestKey("moved", 5), await fx.store.get(manifestKey("moved", 1)));
    const error = await readManifest(fx.store, "moved", 5).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IntegrityError);
    expect((error as Error).message).toContain("the manifest says moved v1, its key says moved v5");
  });

  it("checkName returns a valid name and refuses an invalid one naming it", () => {
    expect(checkName("plan-path_2")).toBe("plan-path_2");
    expect(() => checkName("../etc")).toThrow(TeamNotFoundError);
    expect(() => checkName("../etc")).toThrow(/^team "\.\.\/etc": /);
  });
});
