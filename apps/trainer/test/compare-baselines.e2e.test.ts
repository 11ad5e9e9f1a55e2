/**
 * `compare` on a coding recipe with a tiny budget: the trained team next to the papers' four
 * test-time baselines, each run sampled on the held-out problems for pass@k and the mean test pass
 * rate, written to the table.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore, RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { compare } from "../src/experiments/compare.ts";
import type { Arm } from "../src/experiments/compare-arms.ts";
import { writeComparison } from "../src/experiments/compare-results.ts";
import { loadRecipeText } from "../src/recipe.ts";
import { quiet, TINY_BUDGET, tempRoot } from "./tiny.ts";

const root = tempRoot("compare-baselines");

const base = loadRecipeText(
  readFileSync(join(import.meta.dirname, "..", "recipes", "magrpo-humaneval.yaml"), "utf8"),
  [...TINY_BUDGET, "environment.options.maxTurns=1", "strategy.groupSize=2"],
);

describe("compare with the papers' baselines", () => {
  it("trains the team, evaluates the four baselines without RL, and writes pass@k", async () => {
    const store = new FileStore(join(root, "store"));
    const arms: Arm[] = ["trained", "single", "naive-concat", "sequential", "discussion"];
    const results = await compare({
      base,
      store,
      compareId: "cb",
      arms,
      seeds: [1],
      reporter: quiet,
      samples: 3,
    });
    expect(results.map((r) => [r.arm, r.steps, r.samples > 0, r.tasks])).toEqual([
      ["trained", 1, true, 1],
      ["single", 0, false, 1],
      ["naive-concat", 0, false, 1],
      ["sequential", 0, false, 1],
      ["discussion", 0, false, 1],
    ]);
    for (const r of results) {
      expect(r.sampled).toMatchObject({ samples: 3, tasks: 1 });
      expect(Object.keys(r.sampled!.passAtK)).toEqual(["1", "3"]);
      expect(r.sampled!.testPassRate).toBeGreaterThanOrEqual(0);
    }
    // The baselines answered their own way: one agent alone, or every role twice (discussion).
    const config = async (arm: string) =>
      (await new RunStore(store, `cb-${arm}-s1`).readConfig()) as { environment: { baseline?: string } };
    expect((await config("single")).environment.baseline).toBe("single");
    expect((await config("trained")).environment.baseline).toBeUndefined();

    const written = await writeComparison(store, "cb", base, results);
    const markdown = new TextDecoder().decode(await store.get(written.markdown));
    expect(markdown.split("\n")[0]).toMatch(/\| pass@1 % \| pass@3 % \| tests passed % \|$/);
    expect(markdown).toContain("| discussion | baseline: one round of discussion, then revise (no RL) |");
  }, 600_000);
});
