/**
 * `trainer:sweep` end to end: a 2-point × 2-seed sweep of a tiny recipe into a file:// store,
 * stopped inside a run and continued, its table, sweep.json and plots, finished runs read back
 * instead of retrained, and the command line (the grid file's unit tests are
 * test/experiments/sweep-grid.test.ts).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore, RunStore } from "@troupe/storage/node";
import { DOMParser, type Element } from "@xmldom/xmldom";
import { describe, expect, it } from "vitest";
import { runRecipe } from "../../src/experiments/run-recipe.ts";
import { resultKey, sweep } from "../../src/experiments/sweep.ts";
import { loadGridText, planSweep, type SweepPlan, seedRecipe } from "../../src/experiments/sweep-grid.ts";
import {
  type PointResult,
  SweepFileSchema,
  summariseSweep,
  sweepRows,
  writeSweep,
} from "../../src/experiments/sweep-results.ts";
import type { TrainReporter } from "../../src/run/context.ts";
import { tempRoot, tinySweepRecipe, trainerInProcess } from "../tiny.ts";

const root = tempRoot("sweep");
const storeDir = join(root, "store");
const gridPath = join(root, "grid.yaml");
writeFileSync(join(root, "tiny.yaml"), tinySweepRecipe(storeDir));
writeFileSync(gridPath, "recipe: tiny.yaml\ngrid:\n  optimizer.lr: [0.001, 0.01]\n");

function recorder() {
  const notes: string[] = [];
  let steps = 0;
  const reporter: TrainReporter = {
    step: () => void steps++,
    eval() {},
    note: (m) => void notes.push(m),
  };
  return { notes, reporter, steps: () => steps };
}

function parseSvg(svg: string): Element {
  const doc = new DOMParser({
    onError: (level, message) => {
      throw new Error(`not well-formed SVG (${level}): ${message}`);
    },
  }).parseFromString(svg, "image/svg+xml");
  expect(doc.documentElement!.tagName).toBe("svg");
  return doc.documentElement!;
}

const markGroups = (root: Element, cls: string) =>
  Array.from(root.getElementsByTagName("g")).filter((g) =>
    (g.getAttribute("class") ?? "").split(" ").includes(cls),
  );
const withoutTime = (results: readonly PointResult[]) => results.map(({ seconds: _s, ...rest }) => rest);

describe("trainer sweep end to end", () => {
  const store = new FileStore(storeDir);
  const plan: SweepPlan = planSweep({
    sweepId: "sw",
    command: `npx nx run trainer:sweep -- --grid ${gridPath} --seeds 1,2 --id sw --eval-tasks 8`,
    gridFile: gridPath,
    grid: loadGridText(readFileSync(gridPath, "utf8")),
    recipeText: tinySweepRecipe(storeDir),
    recipeWhere: "tiny.yaml",
    seeds: [1, 2],
    evalTasks: 8,
  });
  let results: PointResult[] = [];

  it("stops inside the second run, then continues: the first run read back, the second resumed", async () => {
    const first = recorder();
    const outcome = await sweep({
      plan,
      store,
      reporter: first.reporter,
      stopRequested: () => first.notes.filter((n) => n.includes("(run ")).length === 2,
    });
    expect(outcome.stopped).toBe(true);
    expect(outcome.results.map((r) => r.runId)).toEqual(["sw-optimizer.lr-0.001-s1"]);
    expect(await new RunStore(store, "sw-optimizer.lr-0.01-s1").latestCommittedStep()).toBe(0);

    const second = recorder();
    const done = await sweep({ plan, store, reporter: second.reporter });
    expect(done.stopped).toBe(false);
    results = done.results;
    // Seed by seed, each seed's points in grid order.
    expect(results.map((r) => [r.point, r.seed])).toEqual([
      ["optimizer.lr=0.001", 1],
      ["optimizer.lr=0.01", 1],
      ["optimizer.lr=0.001", 2],
      ["optimizer.lr=0.01", 2],
    ]);
    expect(second.notes).toContain(
      "sweep 1/4: optimizer.lr=0.001 seed 1 already done (sw-optimizer.lr-0.001-s1)",
    );
    // (the note goes on to say how many stored objects the resume verified)
    expect(
      second.notes.some((n) => n.startsWith("resuming run sw-optimizer.lr-0.01-s1 after committed step 0 (")),
    ).toBe(true);
    expect(second.steps()).toBe(1 + 2 + 2); // the resumed run's last step, then two fresh runs
    for (const r of results) {
      expect(r).toMatchObject({ tasks: 8, steps: 2 });
      expect(r.curve!.map((p) => p.step)).toEqual([0, 1, 2]);
      expect(r.curve!.at(-1)).toMatchObject({ successRate: r.successRate, successes: r.successes });
      expect(r.curve![0]!.successRate).toBe(r.startSuccessRate);
      expect(r.samples).toBeGreaterThan(0);
    }
    // The seeds' warm starts are shared by the points: a point differs from another in RL only.
    expect(results[0]!.startSuccessRate).toBe(results[1]!.startSuccessRate);
  }, 240_000);

  it("a resumed run ends exactly where an uninterrupted one does", async () => {
    const resumed = results[1]!;
    const fresh = await runRecipe({
      recipe: seedRecipe(plan.points[1]!, 1),
      runId: "uninterrupted",
      store,
      reporter: recorder().reporter,
    });
    expect(fresh!.curve).toEqual(resumed.curve);
    expect(fresh!.samples).toBe(resumed.samples);
  }, 120_000);

  it("writes the table, sweep.json, sweep.md and the two plots", async () => {
    const written = await writeSweep(store, plan, results);
    const decode = async (key: string) => new TextDecoder().decode(await store.get(key));
    const file = SweepFileSchema.parse(JSON.parse(await decode(written.json)));
    expect(file.rows.map((r) => [r.point, r.seeds])).toEqual([
      ["optimizer.lr=0.001", 2],
      ["optimizer.lr=0.01", 2],
    ]);
    expect(file.rows).toEqual(summariseSweep(plan, results));
    expect(file.results).toHaveLength(4);
    expect(Object.keys(file.curves)).toEqual(["optimizer.lr=0.001", "optimizer.lr=0.01"]);
    expect(file.curves["optimizer.lr=0.001"]!.map((p) => [p.step, p.n])).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
    ]);
    const row = file.rows[0]!;
    expect(row.pooled.tasks).toBe(16);
    expect(row.finalMean).toBeCloseTo((results[0]!.successRate + results[2]!.successRate) / 2, 12);
    expect(row.gainMean).toBeCloseTo(
      (results[0]!.successRate -
        results[0]!.startSuccessRate +
        results[2]!.successRate -
        results[2]!.startSuccessRate) /
        2,
      12,
    );
    expect(row.perSeed.map((s) => s.runId)).toEqual(["sw-optimizer.lr-0.001-s1", "sw-optimizer.lr-0.001-s2"]);

    const text = written.text.split("\n");
    expect(text[0]).toMatch(/^point\s+steps\s+seeds\s+start %\s+final %\s+95% CI \(seeds\)\s+pooled k\/n/);
    expect(text).toHaveLength(4);
    expect(text[2]).toContain("optimizer.lr=0.001");
    const md = await decode(written.markdown);
    expect(md).toContain(`\`\`\`bash\n${plan.command}\n\`\`\``);
    expect(md).toContain(`| ${sweepRows(file.rows)[1]!.point} | 2 | 2 |`);
    expect(md).toContain("![Held-out success by RL step](curves.svg)");

    const curves = parseSvg(await decode(written.curves));
    expect(markGroups(curves, "line_marks")).toHaveLength(2);
    expect(
      markGroups(curves, "band_marks").flatMap((g) => Array.from(g.getElementsByTagName("path"))),
    ).toHaveLength(2);
    const final = parseSvg(await decode(written.final));
    // Per point a start and a final estimate.
    expect(
      markGroups(final, "value_marks").flatMap((g) => Array.from(g.getElementsByTagName("path"))),
    ).toHaveLength(4);
  });

  it("reads finished runs back, and rebuilds a deleted result from the run's metrics without training", async () => {
    const key = resultKey("sw", "optimizer.lr-0.01", 2);
    await store.delete(key);
    const again = recorder();
    const outcome = await sweep({ plan, store, reporter: again.reporter });
    expect(again.notes.filter((n) => n.endsWith("already done (sw-optimizer.lr-0.001-s1)"))).toHaveLength(1);
    expect(again.notes.filter((n) => n.includes("already done"))).toHaveLength(3);
    expect(
      again.notes.some((n) => n.startsWith("resuming run sw-optimizer.lr-0.01-s2 after committed step 1 (")),
    ).toBe(true);
    expect(again.steps()).toBe(0);
    expect(withoutTime(outcome.results)).toEqual(withoutTime(results));
    expect(await store.head(key)).toBeTruthy();
  }, 120_000);

  it("the command: reads the finished sweep back and prints the table; a changed point under the same id is refused", async () => {
    const args = ["sweep", "--grid", gridPath, "--seeds", "1,2", "--id", "sw", "--eval-tasks", "8"];
    const finished = await trainerInProcess(args);
    expect(finished.code).toBe(0);
    const printed = finished.stdout;
    expect(printed).toContain("optimizer.lr=0.01");
    expect(printed).toContain(`written to file://${storeDir}/runs/sw/`);
    expect(printed).toContain("reproduce or continue: npx nx run trainer:sweep -- --grid");

    const changed = await trainerInProcess([...args, "--set", "train.tasksPerStep=3"]);
    expect(changed.code).toBe(2);
    const lines = changed.stderr;
    expect(lines.split("\n").filter((l) => l.startsWith("error") || l.trim().startsWith("at "))).toEqual([
      'error: sweep sw: point "optimizer.lr=0.001" seed 1 was run with another recipe (the grid, the base recipe or --set changed): pass a new --id',
    ]);

    const badGrid = join(root, "bad.yaml");
    writeFileSync(badGrid, "grid:\n  optimizer.lr: 0.001\n");
    const bad = await trainerInProcess(["sweep", "--grid", badGrid]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(
      `error: sweep grid ${badGrid}: grid.optimizer.lr: expected a list of values, e.g. [0.0001, 0.0003], got 0.001\n`,
    );
  });
});
