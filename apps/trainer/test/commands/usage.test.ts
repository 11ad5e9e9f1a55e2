/** What `trainer --help` and `trainer <command> --help` print. */
import { describe, expect, it } from "vitest";
import { USAGE, USAGES } from "../../src/commands/usage.ts";

describe("usage", () => {
  it("one usage per command, each starting `usage: trainer <command> `", () => {
    expect(Object.keys(USAGES)).toEqual(["train", "sft", "eval", "compare", "sweep", "report", "publish"]);
    for (const [command, usage] of Object.entries(USAGES)) {
      expect(usage.startsWith(`usage: trainer ${command} `)).toBe(true);
    }
    // Every command that loads a recipe to run it documents the same two recipe flags.
    for (const command of ["train", "sft", "compare", "sweep"]) {
      expect(USAGES[command]).toContain(
        '  --recipe  a recipe name from apps/trainer/recipes (default: "default")',
      );
      expect(USAGES[command]).toContain("  --set     override a recipe field");
    }
  });

  it("the overview is each command's first line, aligned under one `usage:`, then how to get one command's", () => {
    const lines = USAGE.split("\n");
    const firsts = Object.values(USAGES).map((u) => u.split("\n")[0]!);
    expect(lines).toHaveLength(firsts.length + 1);
    expect(lines[0]).toBe(firsts[0]);
    for (const [i, first] of firsts.entries()) {
      expect(lines[i]).toBe(i === 0 ? first : first.replace(/^usage: /, "       "));
    }
    expect(lines.at(-1)).toBe("  trainer <command> --help describes one command");
  });
});
