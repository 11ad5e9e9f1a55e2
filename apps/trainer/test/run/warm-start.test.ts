import { describe, expect, it } from "vitest";
import { recipeEnvironment } from "../../src/envs.ts";
import { loadRecipeText, RecipeError } from "../../src/recipe.ts";
import { checkDemonstrationRoles, demonstrationEnvironment, warmStartLr } from "../../src/run/warm-start.ts";
import { warmStartId } from "../../src/run/warm-start-cache.ts";

const sft = { steps: 10, batchSize: 8, lr: 1, mistakeRate: 0 };
const lrs = (extra: object) => Array.from({ length: 10 }, (_, s) => warmStartLr(s, { ...sft, ...extra }));

describe("warmStartLr", () => {
  it("is constant when no schedule is given", () => {
    expect(lrs({})).toEqual(Array(10).fill(1));
  });

  it("wsd holds the rate, then decays linearly to the floor over the last decayFraction of the steps", () => {
    expect(lrs({ schedule: "wsd", decayFraction: 0.2, minLrRatio: 0.1 })).toEqual([
      1, 1, 1, 1, 1, 1, 1, 1, 0.55, 0.1,
    ]);
    // Default fraction 0.2 and floor 0.1.
    expect(lrs({ schedule: "wsd" })).toEqual(lrs({ schedule: "wsd", decayFraction: 0.2, minLrRatio: 0.1 }));
    const half = lrs({ schedule: "wsd", decayFraction: 0.5, minLrRatio: 0 });
    expect(half.slice(0, 5)).toEqual([1, 1, 1, 1, 1]);
    expect(half.slice(5).map((x) => +x.toFixed(12))).toEqual([0.8, 0.6, 0.4, 0.2, 0]);
  });

  it("cosine and linear decay from the first step, as the RL schedules do", () => {
    const cosine = lrs({ schedule: "cosine", minLrRatio: 0.1 });
    expect(cosine[0]).toBe(1);
    expect(cosine[5]).toBeCloseTo(0.55, 12);
    expect(lrs({ schedule: "linear", minLrRatio: 0 }).map((x) => +x.toFixed(12))).toEqual([
      1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1,
    ]);
  });

  it("warms up linearly over the first warmupSteps, on top of the schedule", () => {
    expect(lrs({ warmupSteps: 4 })).toEqual([0.25, 0.5, 0.75, 1, 1, 1, 1, 1, 1, 1]);
    expect(lrs({ warmupSteps: 0 })).toEqual(lrs({}));
    const linear = lrs({ schedule: "linear", minLrRatio: 0, warmupSteps: 2 }).map((x) => +x.toFixed(12));
    expect(linear).toEqual([0.5, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]);
  });
});

describe("demonstrationEnvironment", () => {
  const recipe = (sft: string) =>
    loadRecipeText(`
name: short-demos
environment:
  name: plan-path
  options: { roles: tool-call, maxTurns: 2, rows: 6, cols: 6, minPathLength: 3 }
strategy: { name: atgrpo }
sft: ${sft}
`);

  it("draws the demonstrations' tasks with sft.environmentOptions in place of the recipe's", () => {
    const r = recipe("{ steps: 10, environmentOptions: { maxPathLength: 4 } }");
    const { trainerEnv, team } = recipeEnvironment(r);
    const demoEnv = demonstrationEnvironment(r, trainerEnv);
    const lengths = (env: typeof trainerEnv) =>
      new Set(env.generateTasks("train", 100, 3).map((t) => (t.payload as { optimal: number }).optimal));
    expect([...lengths(demoEnv)].sort()).toEqual([3, 4]);
    expect(Math.max(...lengths(trainerEnv))).toBeGreaterThan(4);
    // Without the field the recipe's own environment, and the cache id, are used.
    const plain = recipe("{ steps: 10 }");
    expect(demonstrationEnvironment(plain, trainerEnv)).toBe(trainerEnv);
    expect(warmStartId(r, team)).not.toBe(warmStartId(plain, team));
  });

  it("names the field when an option is bad", () => {
    const r = recipe("{ steps: 10, environmentOptions: { maxPathLength: 0 } }");
    const { trainerEnv } = recipeEnvironment(r);
    expect(() => demonstrationEnvironment(r, trainerEnv)).toThrow(RecipeError);
    expect(() => demonstrationEnvironment(r, trainerEnv)).toThrow(
      /^sft\.environmentOptions: .*maxPathLength/,
    );
    const roles = recipe("{ steps: 10, environmentOptions: { roles: compact } }");
    expect(() => demonstrationEnvironment(roles, trainerEnv)).toThrow(
      "sft.environmentOptions: roles cannot differ from the recipe's (the team is the same)",
    );
  });

  it("checks the roles that slips and cuts name, in one line", () => {
    const r = recipe("{ steps: 10, mistakeRoles: [plan], cut: { rate: 0.5, length: 2, roles: [plan] } }");
    const { team } = recipeEnvironment(r);
    expect(() => checkDemonstrationRoles(r.sft!, team)).not.toThrow();
    const cut = recipe("{ steps: 10, cut: { rate: 0.5, length: 2, roles: [planner] } }");
    expect(() => checkDemonstrationRoles(cut.sft!, team)).toThrow(
      'sft.cut.roles: "planner" is not a role of this team (tool, plan)',
    );
    const slips = recipe("{ steps: 10, mistakeRoles: [fixer] }");
    expect(() => checkDemonstrationRoles(slips.sft!, team)).toThrow(RecipeError);
    // A cut is part of what the warm start learns from, so of its cache id.
    expect(warmStartId(cut, team)).not.toBe(warmStartId(recipe("{ steps: 10 }"), team));
  });
});
