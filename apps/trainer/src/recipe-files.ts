/**
 * Recipes and run configs with the files their environment reads: an environment of one's own
 * (`environment.module`) and the files a data-file environment names. A recipe's paths are
 * relative to the recipe; they are recorded (run config, then the published team's manifest) as
 * {path, sha256}, the path relative to the workspace root. Reading a run's config loads the same
 * files again and refuses, in one line, a file whose content changed since the run recorded it.
 */
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { EnvironmentOptionsError, environmentFiles } from "@troupe/envs";
import { prepareEnvironment } from "@troupe/envs/module";
import { stringify } from "yaml";
import { workspaceRoot } from "./app-paths.ts";
import { parseRecipe, type Recipe, RecipeError, recipeObject } from "./recipe.ts";

/** Loads the environment's files of a raw recipe object; its `environment` then records them. */
export async function withEnvironmentFiles(
  raw: Record<string, unknown>,
  where: string,
  base: string,
): Promise<Record<string, unknown>> {
  const environment = raw.environment;
  if (typeof environment !== "object" || environment === null || Array.isArray(environment)) return raw;
  const section = environment as Record<string, unknown>;
  if (section.module === undefined && typeof section.name !== "string") return raw;
  try {
    const prepared = await prepareEnvironment(
      {
        name: typeof section.name === "string" ? section.name : undefined,
        module: section.module as string | undefined,
        options: (section.options ?? {}) as Record<string, unknown>,
      },
      { base, root: workspaceRoot, recordedBy: where },
    );
    return { ...raw, environment: { ...section, ...prepared } };
  } catch (error) {
    if (!(error instanceof EnvironmentOptionsError)) throw error;
    throw new RecipeError(`${where}: ${error.message}`);
  }
}

/** A recipe file with `--set` overrides, its environment's files loaded (paths relative to the file). */
export async function loadRecipeFile(path: string, overrides: readonly string[] = []): Promise<Recipe> {
  const raw = recipeObject(readFileSync(path, "utf8"), overrides, path);
  return parseRecipe(await withEnvironmentFiles(raw, path, dirname(path)), path);
}

/** A run's stored config, its environment's files loaded again and checked against their recorded hashes. */
export async function parseRunConfig(config: unknown, where: string): Promise<Recipe> {
  if (typeof config !== "object" || config === null || Array.isArray(config))
    return parseRecipe(config, where);
  return parseRecipe(
    await withEnvironmentFiles(config as Record<string, unknown>, where, workspaceRoot),
    where,
  );
}

/**
 * A recipe's text with its environment's files loaded and recorded ({path, sha256}), for the
 * commands that build many recipes from one text (sweep); a recipe without such files is returned
 * as it is, byte for byte.
 */
export async function recipeTextWithFiles(text: string, path: string): Promise<string> {
  const raw = recipeObject(text, [], path);
  const environment = raw.environment as { module?: unknown; name?: unknown } | undefined;
  const named = typeof environment?.name === "string" ? environment.name : undefined;
  const files = named !== undefined && Object.keys(safeFiles(named)).length > 0;
  if (environment?.module === undefined && !files) return text;
  return stringify(await withEnvironmentFiles(raw, path, dirname(path)));
}

function safeFiles(name: string) {
  try {
    return environmentFiles(name);
  } catch {
    return {}; // an unknown name: the recipe's own check says so
  }
}
