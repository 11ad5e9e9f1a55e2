import { describe, expect, it } from "vitest";
import { TeamNotFoundError } from "../src/index.ts";
import { registryFixture } from "./registry-fixture.ts";

const fx = registryFixture();

describe("aliases", () => {
  it("moves aliases with history and rolls them back", async () => {
    const { registry } = fx;
    for (let i = 0; i < 3; i++) await registry.publish({ ...fx.input, name: "aliased" });
    await registry.setAlias("aliased", "stable", 1);
    await registry.setAlias("aliased", "stable", 3);
    await registry.setAlias("aliased", "stable", 2);
    expect((await registry.resolve("aliased", "stable")).version).toBe(2);
    expect((await registry.aliasHistory("aliased", "stable")).map((h) => h.version)).toEqual([1, 3, 2]);
    expect(await registry.rollbackAlias("aliased", "stable")).toBe(3);
    expect((await registry.resolve("aliased", "stable")).version).toBe(3);
    expect(await registry.rollbackAlias("aliased", "stable")).toBe(1);
    await expect(registry.rollbackAlias("aliased", "stable")).rejects.toThrow(/no earlier version/);
    expect((await registry.list()).find((t) => t.name === "aliased")!.aliases).toEqual({ stable: 1 });
    // publish --alias moves it too.
    const v4 = await registry.publish({ ...fx.input, name: "aliased", alias: "stable" });
    expect((await registry.resolve("aliased", "stable")).version).toBe(v4.version);
    await expect(registry.setAlias("aliased", "stable", 9)).rejects.toThrow(TeamNotFoundError);
    await expect(registry.setAlias("aliased", "latest", 1)).rejects.toThrow(/implicit/);
    await expect(registry.resolve("aliased", "beta")).rejects.toThrow(
      'team "aliased" has no alias "beta" (aliases: latest, stable)',
    );
    await expect(registry.resolve("nobody")).rejects.toThrow('team "nobody" not found');
  });
});
