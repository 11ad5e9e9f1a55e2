/** The trainer's folders found from its own file: apps/trainer with its recipes, and the workspace root above it. */
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { appRoot, workspaceRoot } from "../src/app-paths.ts";

describe("app paths", () => {
  it("appRoot is apps/trainer (its package, recipes and sweeps); workspaceRoot is two folders above", () => {
    expect(appRoot).toBe(resolve(import.meta.dirname, ".."));
    expect(JSON.parse(readFileSync(join(appRoot, "package.json"), "utf8")).name).toBe("@troupe/trainer");
    expect(existsSync(join(appRoot, "recipes", "default.yaml"))).toBe(true);
    expect(existsSync(join(appRoot, "sweeps"))).toBe(true);
    expect(basename(dirname(appRoot))).toBe("apps");
    expect(workspaceRoot).toBe(resolve(appRoot, "..", ".."));
    expect(existsSync(join(workspaceRoot, "nx.json"))).toBe(true);
  });
});
