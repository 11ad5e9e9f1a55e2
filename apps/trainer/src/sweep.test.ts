/**
 * `trainer:sweep`: the grid file and its points (unit), then a 2-point × 2-seed sweep of a tiny
 * recipe end to end into a file:// store: stopped inside a run and continued, its table,
 * sweep.json and plots, finished runs read back instead of retrained, and the command line.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore, RunStore } from "@troupe/storage/node";
import { DOMParser, type Element } from "@xmldom/xmldom";
import { describe, expect, it } from "vitest";
import { TINY_ONE_TURN, tempRoot, trainerInProcess } from "../test/tiny.ts";
import { evalTasksOverride, parseSeeds } from "./compare-command.ts";
import { RecipeError } from "./recipe.ts";
import { runRecipe } from "./run-recipe.ts";
import {
  assignments,
  expandGrid,
  loadGridText,
  type PointResult,
  planSweep,
  pointId,
  resultKey,
  SweepFileSchema,
  type SweepPlan,
  seedRecipe,
  summariseSweep,
  sweep,
  sweepRows,
  writeSweep,
} from "./sweep.ts";
import { commandLine } from "./sweep-command.ts";
import type { TrainReporter } from "./train.ts";

const recipeText = (store: string) => `
name: tiny
seed: 0
store: file://${store}
${TINY_ONE_TURN}
train: { steps: 2, tasksPerStep: 2, evalEvery: 1, evalTasks: 64 }
`;

/** The error line a grid file gives, or "" when it is fine. */
function gridError(text: string): string {
  try {
    expandGrid(loadGridText(text, "sweep grid g.yaml"), "sweep grid g.yaml");
    return "";
  } catch (error) {
    expect(error).toBeInstanceOf(RecipeError);
    return (error as Error).message;
  }
}

describe("sweep grid", () => {
  it("expands the cartesian product in file order, the first key slowest, with readable names and safe ids", () => {
    const points = expandGrid(
      loadGridText("grid:\n  optimizer.lr: [0.0001, 0.0003]\n  strategy.candidates: [4, 8]\n"),
    );
    expect(points.map((p) => p.name)).toEqual([
      "optimizer.lr=0.0001,strategy.candidates=4",
      "optimizer.lr=0.0001,strategy.candidates=8",
      "optimizer.lr=0.0003,strategy.candidates=4",
      "optimizer.lr=0.0003,strategy.candidates=8",
    ]);
    expect(points[3]).toEqual({
      name: "optimizer.lr=0.0003,strategy.candidates=8",
      id: "optimizer.lr-0.0003_strategy.candidates-8",
      set: ["optimizer.lr=0.0003", "strategy.candidates=8"],
    });
  });

  it("named points × grid cells; a set as a mapping or as key=value strings", () => {
    const points = expandGrid(
      loadGridText(`
points:
  - { name: shared policy, set: { team.specialisation: shared } }
  - { name: per-role, set: ["team.specialisation=per-role", "team.turnOrder=parallel"] }
grid: { train.epochs: [1, 2] }
`),
    );
    expect(points.map((p) => [p.name, p.id])).toEqual([
      ["shared policy,train.epochs=1", "shared-policy_train.epochs-1"],
      ["shared policy,train.epochs=2", "shared-policy_train.epochs-2"],
      ["per-role,train.epochs=1", "per-role_train.epochs-1"],
      ["per-role,train.epochs=2", "per-role_train.epochs-2"],
    ]);
    expect(points[2]!.set).toEqual([
      "team.specialisation=per-role",
      "team.turnOrder=parallel",
      "train.epochs=1",
    ]);
    expect(points[0]!.set).toEqual(['team.specialisation="shared"', "train.epochs=1"]);
    // Only named points: no grid needed.
    expect(
      expandGrid(loadGridText("points: [{ name: a }, { name: b, set: [x.y=1] }]")).map((p) => p.set),
    ).toEqual([[], ["x.y=1"]]);
    expect(assignments({ "a.b": "per-role", c: [1, 2], d: { e: true } })).toEqual([
      'a.b="per-role"',
      "c=[1,2]",
      'd={"e":true}',
    ]);
  });

  it("a long name keeps a prefix and a hash in its id; ids are stable", () => {
    const name = Array.from({ length: 6 }, (_, i) => `environment.options.key${i}=value${i}`).join(",");
    const id = pointId(name);
    expect(id.length).toBeLessThanOrEqual(48);
    expect(id).toMatch(/^environment\.options\.key0-value0_env.*-[0-9a-f]{8}$/);
    expect(pointId(name)).toBe(id);
    expect(pointId("=odd/name")).toBe("odd-name");
  });

  it("a bad grid file is one error line naming the key and the value", () => {
    const cases: [string, string][] = [
      [
        "grid: { optimizer.lr: 0.001 }",
        "sweep grid g.yaml: grid.optimizer.lr: expected a list of values, e.g. [0.0001, 0.0003], got 0.001",
      ],
      [
        "grid: { optimizer.lr: [] }",
        "sweep grid g.yaml: grid.optimizer.lr: expected at least one value, got []",
      ],
      ["grdi: { a: [1] }", 'sweep grid g.yaml: unknown key "grdi" (known: recipe, set, grid, points)'],
      ["set: { a: 1 }", "sweep grid g.yaml: needs a grid: mapping or a points: list (or both)"],
      ["grid: { 'a b': [1] }", 'sweep grid g.yaml: grid: "a b" is not a key path like optimizer.lr'],
      ["points: [{ nam: x }]", 'sweep grid g.yaml: unknown key "points.0.nam" (known: name, set)'],
      [
        "points: [{ name: x, set: 5 }]",
        'sweep grid g.yaml: points.0.set: expected a mapping (key.path: value) or a list of "key.path=value" strings, got 5',
      ],
      ["grid: { seed: [1, 2] }", "sweep grid g.yaml: grid.seed: the sweep sets each run's seed from --seeds"],
      [
        "points: [{ name: a, set: { train.evalTasks: 8 } }]",
        "sweep grid g.yaml: points.0.set: train.evalTasks: every run evaluates on the same held-out tasks: use --eval-tasks",
      ],
      [
        "points: [{ name: 'a b' }, { name: 'a-b' }]",
        'sweep grid g.yaml: points "a b" and "a-b" both get the id "a-b": rename one',
      ],
      ["grid: { a: [1, 1] }", 'sweep grid g.yaml: two points are named "a=1"'],
    ];
    for (const [text, message] of cases) expect(gridError(text), text).toBe(message);
    expect(gridError("grid: {a: [1}")).toMatch(/^sweep grid g\.yaml: not valid YAML: [^\n]+$/);
  });

  it("plans every point's recipe before any work: overrides in order, then the sweep's evaluation and seed", () => {
    const grid = loadGridText(`
set: { train.steps: 5, optimizer.lr: 0.5 }
grid: { optimizer.lr: [0.001, 0.003], strategy.candidates: [3] }
`);
    const plan = planSweep({
      sweepId: "s1",
      command: "c",
      gridFile: "g.yaml",
      grid,
      recipeText: recipeText("/tmp/unused"),
      recipeWhere: "tiny.yaml",
      cliSets: ["train.steps=7"],
      seeds: [1, 2],
      evalTasks: 8,
    });
    expect(plan.base.train).toMatchObject({ steps: 7, evalTasks: 8, evalTemperature: 0 });
    expect(plan.points.map((p) => [p.recipe.optimizer.lr, p.recipe.train.steps, p.recipe.strategy])).toEqual([
      [0.001, 7, expect.objectContaining({ candidates: 3 })],
      [0.003, 7, expect.objectContaining({ candidates: 3 })],
    ]);
    expect(seedRecipe(plan.points[1]!, 2)).toMatchObject({ seed: 2, optimizer: { lr: 0.003 } });

    const bad =
      (text: string, extra: Partial<Parameters<typeof planSweep>[0]> = {}) =>
      () =>
        planSweep({
          sweepId: "s1",
          command: "c",
          gridFile: "g.yaml",
          grid: loadGridText(text),
          recipeText: recipeText("/tmp/unused"),
          recipeWhere: "tiny.yaml",
          seeds: [1],
          evalTasks: 8,
          ...extra,
        });
    expect(bad("grid: { optimizer.lr: [fast] }")).toThrow(
      /^sweep point "optimizer\.lr=fast": optimizer\.lr: .*expected number/,
    );
    expect(bad("points: [{ name: elsewhere, set: { store: 'file:///tmp/x' } }]")).toThrow(
      'sweep point "elsewhere": store: every run of a sweep is in the base recipe\'s store (file:///tmp/unused)',
    );
    expect(bad("grid: { a: [1] }", { sweepId: "no spaces" })).toThrow(/^--id: "no spaces" must be/);
    expect(bad("grid: { a: [1] }", { seeds: [1, 1] })).toThrow("--seeds: a seed is repeated");
  });

  it("command-line helpers: seeds, --eval-tasks (default 500) against --set, quoting", () => {
    expect(parseSeeds("1, 2,3")).toEqual([1, 2, 3]);
    expect(() => parseSeeds("1,x")).toThrow('--seeds: "x" is not a non-negative integer');
    expect(evalTasksOverride(undefined, [])).toEqual(["train.evalTasks=500"]);
    expect(evalTasksOverride("64", ["train.steps=3"])).toEqual(["train.evalTasks=64"]);
    expect(evalTasksOverride(undefined, ["train.evalTasks=32"])).toEqual([]);
    expect(() => evalTasksOverride("64", ["train.evalTasks=32"])).toThrow(/once/);
    expect(() => evalTasksOverride("0", [])).toThrow(/positive integer/);
    expect(commandLine(["--grid", "a b.yaml", "--set", "x.y=it's"])).toBe(
      `npx nx run trainer:sweep -- --grid 'a b.yaml' --set 'x.y=it'\\''s'`,
    );
  });
});

// ------------------------------------------------------------------ end to end

const root = tempRoot("sweep");
const storeDir = join(root, "store");
const gridPath = join(root, "grid.yaml");
writeFileSync(join(root, "tiny.yaml"), recipeText(storeDir));
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
    recipeText: recipeText(storeDir),
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
