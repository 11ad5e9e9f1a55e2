import { describe, expect, it } from "vitest";
import { claimKey, ManifestError, manifestKey, PublishConflictError } from "../src/index.ts";
import { registryFixture } from "./registry-fixture.ts";

const fx = registryFixture();

describe("publishing a team version", () => {
  it("numbers versions, keeps them immutable, and refuses a taken version", async () => {
    const { registry } = fx;
    const v1 = await registry.publish({ ...fx.input, name: "versions" });
    const v2 = await registry.publish({
      ...fx.input,
      name: "versions",
      source: { runId: "fixture", step: 7 },
    });
    expect([v1.version, v2.version]).toEqual([1, 2]);
    expect((await registry.resolve("versions", "v1")).source.step).toBe(0);
    expect((await registry.resolve("versions", "2")).source.step).toBe(7);
    expect((await registry.resolve("versions")).version).toBe(2);
    // Asking for a taken version is refused, and v1's manifest is left untouched.
    const before = await fx.store.get(manifestKey("versions", 1));
    await expect(registry.publish({ ...fx.input, name: "versions", version: 1 })).rejects.toThrow(
      PublishConflictError,
    );
    expect(Buffer.from(await fx.store.get(manifestKey("versions", 1))).equals(Buffer.from(before))).toBe(
      true,
    );
    // Two publishers at once: the conditional put gives each its own version.
    const [a, b] = await Promise.all([
      registry.publish({ ...fx.input, name: "versions", source: { runId: "a", step: 1 } }),
      registry.publish({ ...fx.input, name: "versions", source: { runId: "b", step: 1 } }),
    ]);
    expect([a.version, b.version].sort()).toEqual([3, 4]);
    expect((await registry.resolve("versions", `v${a.version}`)).source.runId).toBe("a");
    expect((await registry.resolve("versions", `v${b.version}`)).source.runId).toBe("b");
    // A publisher that claimed v5 and died leaves no visible version; the next publish skips it.
    expect(await fx.store.putIfAbsent(claimKey("versions", 5), new Uint8Array([1]))).toBe(true);
    expect((await registry.publish({ ...fx.input, name: "versions" })).version).toBe(6);
    expect((await registry.list()).find((t) => t.name === "versions")!.versions).toEqual([1, 2, 3, 4, 6]);
    await expect(registry.resolve("versions", "v5")).rejects.toThrow(
      'team "versions" has no version 5 (versions: 1, 2, 3, 4, 6)',
    );
  });
  it("refuses an invalid manifest, naming the field (see manifest.test.ts for every rule)", async () => {
    const { registry } = fx;
    const good = await registry.publish({ ...fx.input, name: "strict" });
    // A bad manifest in the store is refused on resolve, naming the object and the field.
    await fx.store.put(
      manifestKey("broken", 1),
      new TextEncoder().encode(JSON.stringify({ ...good, name: "broken", createdAt: "yesterday" })),
    );
    await expect(registry.resolve("broken")).rejects.toThrow(
      "teams/broken/versions/00000001/manifest.json: createdAt:",
    );
    // publish refuses before writing anything.
    await expect(
      registry.publish({ ...fx.input, name: "nothing", roles: [{ id: "planner", policy: "nobody" }] }),
    ).rejects.toThrow(ManifestError);
    expect(await fx.store.list("teams/nothing/")).toEqual([]);
  });
});
