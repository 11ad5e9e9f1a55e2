/**
 * Where the commands find things: a recipe or sweep grid by name or path (one line listing where
 * it looked), a run by id (also in the older local layout), a recipe's newest run with a committed
 * step, and new run ids.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore, RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { appRoot } from "../../src/app-paths.ts";
import {
  findNewestRun,
  resolveGridPath,
  resolveRecipePath,
  runIn,
  timestampId,
} from "../../src/commands/workspace.ts";
import { loadRecipeText, RecipeError } from "../../src/recipe.ts";
import { TINY_ONE_TURN, tempRoot } from "../tiny.ts";

const root = tempRoot("workspace");

describe("recipes and grids", () => {
  it("by name from the app's recipes/ and sweeps/, or by path", () => {
    expect(resolveRecipePath("default")).toBe(join(appRoot, "recipes", "default.yaml"));
    expect(resolveRecipePath("default.yaml")).toBe(join(appRoot, "recipes", "default.yaml"));
    expect(resolveGridPath("example")).toBe(join(appRoot, "sweeps", "example.yaml"));
    const mine = join(root, "mine.yml");
    writeFileSync(mine, "name: mine\n");
    expect(resolveRecipePath(mine)).toBe(mine);
  });

  it("a missing one (or a file that is not YAML) is one RecipeError naming where it looked", () => {
    const notYaml = join(root, "notes.txt");
    writeFileSync(notYaml, "x");
    for (const [resolveIt, what, name] of [
      [resolveRecipePath, "recipe", "nope"],
      [resolveGridPath, "grid", "nope"],
      [resolveRecipePath, "recipe", notYaml],
    ] as const) {
      expect(() => resolveIt(name)).toThrow(RecipeError);
      expect(() => resolveIt(name)).toThrow(
        new RegExp(
          `^${what} "${name}" not found \\(looked at .*${join(appRoot, what === "grid" ? "sweeps" : "recipes", `${name}`)}\\)$`,
        ),
      );
    }
  });
});

describe("runs", () => {
  const recipe = loadRecipeText(`name: tiny\n${TINY_ONE_TURN}\n`);

  it("the newest run of the recipe with a committed step; other recipes' and uncommitted runs are skipped", async () => {
    const store = new FileStore(join(root, "store"));
    expect(await findNewestRun(store, recipe)).toBeUndefined();
    await new RunStore(store, "tiny-20260101-000000Z").commitStep(0, {});
    await new RunStore(store, "tiny-20260102-000000Z").commitStep(0, {});
    await new RunStore(store, "tiny-20260103-000000Z").writeConfig({ name: "tiny" }); // never committed
    await new RunStore(store, "tinier-20260104-000000Z").commitStep(0, {}); // another recipe's
    expect((await findNewestRun(store, recipe))?.runId).toBe("tiny-20260102-000000Z");
  });

  it("a run in the older local layout (runs/runs/<id>/) is found by id and as the newest", async () => {
    const store = new FileStore(join(root, "old"));
    const legacy = new FileStore(join(root, "old", "runs"));
    await new RunStore(legacy, "tiny-20250101-000000Z").writeConfig({ name: "tiny" });
    await new RunStore(legacy, "tiny-20250101-000000Z").commitStep(0, {});
    const byId = await runIn(store, "tiny-20250101-000000Z");
    expect((byId.store as FileStore).root).toBe(legacy.root);
    expect(await byId.readConfig()).toEqual({ name: "tiny" });
    const newest = await findNewestRun(store, recipe);
    expect(newest?.runId).toBe("tiny-20250101-000000Z");
    expect((newest!.store as FileStore).root).toBe(legacy.root);
    // A run id in neither layout: the store's own place, where a new run would be written.
    expect(((await runIn(store, "tiny-new")).store as FileStore).root).toBe(store.root);
  });

  it("timestampId: UTC seconds, sortable, safe in a run id", () => {
    const day = () => new Date().toISOString().slice(0, 10).replace(/-/g, "");
    const before = day();
    const id = timestampId();
    const after = day();
    expect(id).toMatch(/^\d{8}-\d{6}Z$/);
    expect([before, after]).toContain(id.slice(0, 8));
  });
});
