/**
 * The environment part of a recipe: options checked against the named environment's own schema,
 * `--set environment.name=…` starting from that environment's defaults, and one `error:` line
 * naming the key for an unknown environment or an option of another one; the environment and team
 * a recipe builds (a baseline's answered its own way), and a warm start refused without a solver.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { checkDemonstrations, createEnvironment, recipeEnvironment } from "../src/envs.ts";
import { loadRecipeText, RecipeError } from "../src/recipe.ts";

const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const defaultRecipe = readFileSync(join(appRoot, "recipes", "default.yaml"), "utf8");

describe("recipe environments", () => {
  it("switching environment.name starts from that environment's defaults", () => {
    const sudoku = loadRecipeText(defaultRecipe, ["environment.name=sudoku"]);
    expect(sudoku.environment).toEqual({ name: "sudoku", options: {} });
    const coding = loadRecipeText(defaultRecipe, [
      "environment.name=coding",
      "environment.options.maxTurns=1",
    ]);
    expect(coding.environment).toEqual({ name: "coding", options: { maxTurns: 1 } });
    expect(recipeEnvironment(coding).team.roles.map((r) => r.id)).toEqual(["helper", "main"]);
    // Naming the same environment keeps the file's options.
    expect(loadRecipeText(defaultRecipe, ["environment.name=plan-path"]).environment.options).toMatchObject({
      rows: 6,
    });
  });

  it("an unknown environment, another environment's option and a bad value name the key", () => {
    expect(() => loadRecipeText(defaultRecipe, ["environment.name=codng"])).toThrow(
      'recipe: environment.name: unknown environment "codng" (known: plan-path, sokoban, sudoku, coding, math, writing, data-file; or environment.module: your own file)',
    );
    const sudokuWithRows =
      "name: x\nenvironment: { name: sudoku, options: { rows: 6 } }\nstrategy: { name: atgrpo }\n";
    expect(() => loadRecipeText(sudokuWithRows)).toThrow(
      /^recipe: environment\.options\.rows: not an option of environment "sudoku" \(its options: roles, maxTurns, hints, reportLine, maxPlanLength, toolWallMs, toolOutputChars, toolWidth, seed, size, givens, maxGivens, splitFractions, rewards\)$/,
    );
    expect(() => loadRecipeText(defaultRecipe, ["environment.options.rows=1"])).toThrow(
      /^recipe: environment\.options\.rows: Too small: expected number to be >=2$/,
    );
    expect(() => loadRecipeText(defaultRecipe, ["environment.baseline=solo"])).toThrow(
      /^recipe: environment\.baseline: Invalid option: expected one of "single"\|"naive-concat"\|"sequential"\|"discussion"$/,
    );
  });

  it("the command line prints one error line, no stack trace", async () => {
    const run = promisify(execFile);
    const failed = await run(
      process.execPath,
      [
        "--conditions=@troupe/source",
        "--import",
        "tsx",
        join(appRoot, "src", "main.ts"),
        "train",
        "--set",
        "environment.name=codng",
      ],
      { cwd: appRoot },
    ).catch((error: { code: number; stderr: string }) => error);
    expect("code" in failed && failed.code).toBe(2);
    expect(failed.stderr).toBe(
      `error: ${join(appRoot, "recipes", "default.yaml")}: environment.name: unknown environment "codng" (known: plan-path, sokoban, sudoku, coding, math, writing, data-file; or environment.module: your own file)\n`,
    );
  });

  it("createEnvironment makes a registry error one recipe line", () => {
    expect(() => createEnvironment("nope", {})).toThrow(
      new RecipeError(
        'recipe: environment.name: unknown environment "nope" (known: plan-path, sokoban, sudoku, coding, math, writing, data-file; or environment.module: your own file)',
      ),
    );
    expect(() => createEnvironment("plan-path", { rows: 1 })).toThrow(
      "recipe: environment.options.rows: Too small: expected number to be >=2",
    );
    expect(createEnvironment("plan-path", { rows: 4, cols: 4 }).generateTasks("test", 2, 0)).toHaveLength(2);
  });

  it("a baseline answers with its own team; a warm start needs the environment's solver", () => {
    const base = "name: x\nenvironment: { name: plan-path }\nstrategy: { name: atgrpo }\n";
    const roles = (sets: string[]) =>
      recipeEnvironment(loadRecipeText(base, sets)).team.roles.map((r) => r.id);
    expect(roles([])).toEqual(["planner", "fixer"]);
    expect(roles(["environment.baseline=single"])).toEqual(["single"]);
    expect(roles(["environment.baseline=discussion"])).toEqual(["planner", "fixer"]);

    const planPath = loadRecipeText(base, ["sft.steps=2"]);
    expect(() => checkDemonstrations(planPath, recipeEnvironment(planPath).trainerEnv)).not.toThrow();
    const writing = loadRecipeText("name: w\nenvironment: { name: writing }\nstrategy: { name: atgrpo }\n", [
      "sft.steps=2",
    ]);
    expect(() => checkDemonstrations(writing, recipeEnvironment(writing).trainerEnv)).toThrow(
      /^environment "writing" has no solver demonstrations \(an entry's demo, a data file's demonstrations\): remove the sft section/,
    );
    const noSft = loadRecipeText("name: w\nenvironment: { name: writing }\nstrategy: { name: atgrpo }\n");
    expect(() => checkDemonstrations(noSft, recipeEnvironment(noSft).trainerEnv)).not.toThrow();
  });
});
