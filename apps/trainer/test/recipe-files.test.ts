/**
 * Recipes with the files their environment reads: an environment module next to the recipe is
 * loaded and recorded as {path, sha256}; a run's config loads it again and refuses it in one line
 * once the file changed; a recipe without such files is left as it is.
 */
import { createHash } from "node:crypto";
import { appendFileSync, cpSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { appRoot } from "../src/app-paths.ts";
import { RecipeError } from "../src/recipe.ts";
import { loadRecipeFile, parseRunConfig, recipeTextWithFiles } from "../src/recipe-files.ts";
import { tempRoot } from "./tiny.ts";

const root = tempRoot("recipe-files");
cpSync(resolve(appRoot, "../../examples/your-own-task"), join(root, "example"), { recursive: true });
// A project of one's own has its own node_modules (zod, for the module's schemas): this one's.
symlinkSync(resolve(appRoot, "../../node_modules"), join(root, "node_modules"));
const recipePath = join(root, "example", "recipe.yaml");
const modulePath = join(root, "example", "sum-sentence.ts");

describe("recipe files", () => {
  it("loads a recipe file with --set overrides, its module found next to it and recorded by hash", async () => {
    const recipe = await loadRecipeFile(recipePath, ["train.steps=2"]);
    expect(recipe.name).toBe("sum-sentence");
    expect(recipe.train.steps).toBe(2);
    expect(recipe.environment).toMatchObject({
      name: "sum-sentence",
      options: { max: 9 },
      module: { path: modulePath },
    });
    const recorded = (recipe.environment as { module: { sha256: string } }).module.sha256;
    expect(recorded).toMatch(/^[0-9a-f]{64}$/);
    expect(recorded).toBe(createHash("sha256").update(readFileSync(modulePath)).digest("hex"));
  });

  it("a run's config loads the same files again, and refuses a file changed since, naming it", async () => {
    const recipe = await loadRecipeFile(recipePath);
    const config = JSON.parse(JSON.stringify(recipe));
    expect(await parseRunConfig(config, "run r config")).toEqual(recipe);
    const copy = join(root, "edited.ts");
    cpSync(modulePath, copy);
    const moved = {
      ...config,
      environment: { ...config.environment, module: { ...config.environment.module, path: copy } },
    };
    appendFileSync(copy, "// edited\n");
    await expect(parseRunConfig(moved, "run r config")).rejects.toThrow(RecipeError);
    await expect(parseRunConfig(moved, "run r config")).rejects.toThrow(
      new RegExp(
        `^run r config: environment\\.module: ${copy.replace(/[.]/g, "\\.")} changed since run r config recorded it`,
      ),
    );
  });

  it("recipeTextWithFiles: a recipe without files byte for byte; one with a module gains its record", async () => {
    const plain = readFileSync(join(appRoot, "recipes", "default.yaml"), "utf8");
    expect(await recipeTextWithFiles(plain, join(appRoot, "recipes", "default.yaml"))).toBe(plain);
    const text = readFileSync(recipePath, "utf8");
    const withFiles = await recipeTextWithFiles(text, recipePath);
    expect(withFiles).not.toBe(text);
    expect(withFiles).toContain(`path: ${modulePath}`);
    expect(withFiles).toMatch(/sha256: [0-9a-f]{64}/);
  });

  it("an option the module's environment does not take is one line naming the recipe file", async () => {
    const bad = join(root, "example", "bad.yaml");
    writeFileSync(
      bad,
      readFileSync(recipePath, "utf8").replace("options: { max: 9 }", "options: { max: 9, rows: 3 }"),
    );
    await expect(loadRecipeFile(bad)).rejects.toThrow(RecipeError);
    await expect(loadRecipeFile(bad)).rejects.toThrow(
      new RegExp(`^${bad.replace(/[.]/g, "\\.")}: environment\\.options`),
    );
  });
});
