/**
 * `report` in this process: the page of one or more runs (by id, comma-separated or repeated)
 * written in the store beside its SVG charts, and copied with --out; no --run is one RecipeError
 * line. (The page itself, in Chromium: test/reports/report.test.ts.)
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { appRoot, workspaceRoot } from "../../src/app-paths.ts";
import { commandReport } from "../../src/commands/report.ts";
import { commandTrain } from "../../src/commands/train.ts";
import { RecipeError } from "../../src/recipe.ts";
import { inProcess, tinyCommandRecipe } from "../tiny.ts";

const { root, recipePath, storeRoot } = tinyCommandRecipe(
  "rp",
  `train: { steps: 1, tasksPerStep: 2, evalEvery: 0, evalTasks: 2 }`,
);
const context = {
  workspaceRoot,
  resolveRecipePath: (name: string) =>
    name === "tiny" ? recipePath : join(appRoot, "recipes", `${name}.yaml`),
};
const report = (...args: string[]) => inProcess(() => commandReport(args, context));

beforeAll(async () => {
  for (const run of ["rp-a", "rp-b"]) {
    const trained = await inProcess(() => commandTrain(["--recipe", recipePath, "--run", run]));
    expect(trained.code).toBe(0);
  }
}, 300_000);

describe("report command", () => {
  it("writes the runs' page in the recipe's store, with its charts, and copies it with --out", async () => {
    const out = join(root, "page");
    const result = await report("--recipe", "tiny", "--run", "rp-a,rp-b", "--out", out);
    expect(result.code).toBe(0);
    const [first, second] = result.stdout.split("\n");
    const match = /^report of 2 run\(s\): (.*index\.html) \((\d+) charts as \.svg beside it\)$/.exec(first!);
    expect(match, result.stdout).not.toBeNull();
    expect(match![1]!.startsWith(storeRoot)).toBe(true);
    expect(existsSync(match![1]!)).toBe(true);
    const folder = match![1]!.slice(0, -"index.html".length);
    const svgs = readdirSync(folder).filter((f) => f.endsWith(".svg"));
    expect(svgs.length).toBe(Number(match![2]));
    expect(second).toBe(`copied to ${out}/`);
    expect(readdirSync(out).sort()).toEqual(readdirSync(folder).sort());
  });

  it("--store instead of a recipe's, a repeated --run; no --run is one RecipeError line", async () => {
    const result = await report("--store", `file://${storeRoot}`, "--run", "rp-a", "--run", "rp-b");
    expect(result.stdout).toMatch(/^report of 2 run\(s\): /);
    await expect(report("--recipe", "tiny")).rejects.toThrow(
      new RecipeError("report: pass --run <id>[,<id>…] (runs, or a compare's or sweep's id)"),
    );
    await expect(report("--recipe", "tiny", "--run", " , ")).rejects.toThrow(/^report: pass --run/);
  });
});
