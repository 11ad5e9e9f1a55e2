/**
 * `compare` end to end on a tiny recipe: every arm trains (or only warm-starts) for real, the
 * table and the plots land in the store, and a second call reads the finished arms back instead
 * of rerunning — those of the same recipe only.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore, RunStore } from "@troupe/storage/node";
import { DOMParser } from "@xmldom/xmldom";
import { describe, expect, it } from "vitest";
import { compare } from "../../src/experiments/compare.ts";
import { DEFAULT_ARMS as ARMS } from "../../src/experiments/compare-arms.ts";
import { writeComparison } from "../../src/experiments/compare-results.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import type { TrainReporter } from "../../src/run/context.ts";
import { TINY_ONE_TURN, tempRoot, trainerInProcess } from "../tiny.ts";

const root = tempRoot("compare");

const base = loadRecipeText(`
name: tiny
${TINY_ONE_TURN}
train: { steps: 1, tasksPerStep: 2, evalEvery: 0, evalTasks: 4 }
`);

describe("trainer compare", () => {
  it("runs every arm, writes the table, and reads finished arms back on a second call", async () => {
    const store = new FileStore(join(root, "store"));
    const notes: string[] = [];
    const reporter: TrainReporter = { step() {}, eval() {}, note: (m) => void notes.push(m) };
    const results = await compare({ base, store, compareId: "c1", arms: ARMS, seeds: [5], reporter });
    expect(results.map((r) => r.arm)).toEqual([...ARMS]);
    for (const r of results) {
      expect(r.tasks).toBe(4);
      expect(r.successes).toBe(Math.round(r.successRate * 4));
      expect(r.runId).toBe(`c1-${r.arm}-s5`);
      expect(r.samples > 0).toBe(r.arm !== "warm-start");
      // The held-out curve: the start and the end (evalEvery 0), or only the start without RL.
      expect(r.curve!.map((p) => p.step)).toEqual(r.arm === "warm-start" ? [0] : [0, 1]);
      expect(r.curve!.at(-1)!.successRate).toBe(r.successRate);
    }
    // The single agent's run really is single-agent: only the planner acted.
    const grpo = await new RunStore(store, "c1-grpo-s5").readStep(0);
    const agents = new Set([...grpo.shards.values()].flat().map((s) => s.provenance.agent));
    expect([...agents]).toEqual(["planner"]);

    const written = await writeComparison(store, "c1", base, results);
    const markdown = new TextDecoder().decode(await store.get(written.markdown));
    expect(markdown.split("\n")[0]).toMatch(/^\| arm \| what \| seeds \| held-out success % \|/);
    expect(markdown).toContain("| atgrpo-per-role | team, AT-GRPO (per-role) |");
    const svg = async (key: string) => {
      const text = new TextDecoder().decode(await store.get(key));
      const doc = new DOMParser({
        onError: (level, message) => {
          throw new Error(`${key} is not well-formed (${level}): ${message}`);
        },
      }).parseFromString(text, "image/svg+xml");
      const classes = Array.from(doc.getElementsByTagName("g")).map((g) => g.getAttribute("class") ?? "");
      return { text, classes };
    };
    const curves = await svg(written.curves);
    expect(curves.classes.filter((c) => c.includes("line_marks"))).toHaveLength(ARMS.length);
    for (const arm of ARMS) expect(curves.text).toContain(`>${arm}</text>`);
    const final = await svg(written.final);
    expect(final.classes.filter((c) => c.includes("value_marks"))).toHaveLength(1);

    notes.length = 0;
    const again = await compare({ base, store, compareId: "c1", arms: ["grpo"], seeds: [5], reporter });
    expect(again).toEqual([results[0]]);
    expect(notes).toEqual(["compare: grpo seed 5 already done (c1-grpo-s5)"]);

    // --finished: the table of what has finished, and nothing run (seed 6 was never started).
    const recipePath = join(root, "recipe.yaml");
    writeFileSync(
      recipePath,
      `name: tiny\nstore: file://${join(root, "store")}\n${TINY_ONE_TURN}\ntrain: { steps: 1, tasksPerStep: 2, evalEvery: 0, evalTasks: 4 }\n`,
    );
    const cli = (...flags: string[]) =>
      trainerInProcess([
        "compare",
        "--recipe",
        recipePath,
        "--arms",
        "grpo,atgrpo-shared",
        "--seeds",
        "5,6",
        // the runs above evaluated 4 held-out tasks (compare's default is 500: another recipe)
        "--eval-tasks",
        "4",
        ...flags,
      ]);
    const finished = await cli("--id", "c1", "--finished");
    expect(finished.code).toBe(0);
    expect(finished.stderr).toContain("compare: grpo seed 6 has not finished (left out)");
    expect(await store.head("runs/c1-grpo-s6/config.json")).toBeUndefined();
    expect(finished.stdout).toMatch(/^atgrpo-shared +team, AT-GRPO \(shared policy\) +1 /m);
    expect(finished.stdout).toContain("paired by seed (the best arm minus each other):");
    const tabled = new TextDecoder().decode(await store.get("runs/c1/compare.md"));
    expect(tabled).toContain("**Paired by seed**");
    expect(tabled).toMatch(/\| (grpo|atgrpo-shared) \| (grpo|atgrpo-shared) \| 5 \|/);
    const none = await cli("--id", "c2", "--finished");
    expect([none.code, none.stderr.trim().split("\n").at(-1)]).toEqual([
      2,
      "error: compare c2: none of these arms × seeds has finished",
    ]);
    // The same id after the recipe changed: its finished arms are not this recipe's, one line.
    const changed = await cli("--id", "c1", "--finished", "--set", "train.tasksPerStep=3");
    expect([changed.code, changed.stderr.trim().split("\n").at(-1)]).toEqual([
      2,
      "error: compare c1: grpo seed 5 finished with another recipe (run c1-grpo-s5): " +
        "rerun with the settings it was run with, or pass a new --id",
    ]);
    const noId = await cli("--finished");
    expect(noId.stderr).toContain("--finished: name the compare to tabulate with --id");
  }, 120_000);
});
