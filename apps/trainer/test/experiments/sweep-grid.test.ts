/**
 * `trainer:sweep`'s grid file and its points, and the plan (unit; the command's flags are
 * test/commands/compare.test.ts and test/commands/sweep.test.ts, the sweep end to end is
 * test/experiments/sweep.test.ts).
 */
import { describe, expect, it } from "vitest";
import {
  assignments,
  expandGrid,
  loadGridText,
  planSweep,
  pointId,
  seedRecipe,
} from "../../src/experiments/sweep-grid.ts";
import { RecipeError } from "../../src/recipe.ts";
import { tinySweepRecipe } from "../tiny.ts";

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
      recipeText: tinySweepRecipe("/tmp/unused"),
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
          recipeText: tinySweepRecipe("/tmp/unused"),
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
});
