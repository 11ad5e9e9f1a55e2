import { describe, expect, it } from "vitest";
import { armRecipe } from "../../src/experiments/compare-arms.ts";
import { loadRecipeText } from "../../src/recipe.ts";

const base = loadRecipeText(`
name: base
seed: 1
environment:
  name: plan-path
  options: { roles: compact, maxTurns: 2, rows: 6, cols: 6 }
strategy: { name: atgrpo, candidates: 4 }
train: { steps: 30, tasksPerStep: 8 }
`);

describe("compare arms", () => {
  it("single-agent GRPO: the planner alone with the team's N·T = 4 turns, K = 4 episodes per task", () => {
    const r = armRecipe(base, "grpo", 7);
    expect(r.seed).toBe(7);
    expect(r.environment.options).toMatchObject({ roles: "single", maxTurns: 4 });
    expect(r.team.specialisation).toBe("shared");
    expect(r.strategy).toMatchObject({ name: "grpo", groupSize: 4 });
    expect(r.train.tasksPerStep).toBe(8);
    expect(r.train.steps).toBe(30);
  });

  it("single-agent GRPO: demonstrations that slip in some team roles slip in the single agent's turns", () => {
    const toolTeam = (sft: string) =>
      loadRecipeText(`
name: base
environment:
  name: plan-path
  options: { roles: tool-call, maxTurns: 2 }
strategy: { name: atgrpo, candidates: 4 }
sft: ${sft}
`);
    const slips = toolTeam("{ steps: 10, mistakeRate: 0.3, mistakeRoles: [plan] }");
    expect(armRecipe(slips, "grpo", 1).sft).toMatchObject({ steps: 10, mistakeRate: 0.3 });
    expect(armRecipe(slips, "grpo", 1).sft?.mistakeRoles).toBeUndefined();
    expect(armRecipe(slips, "atgrpo-per-role", 1).sft?.mistakeRoles).toEqual(["plan"]);
    const cuts = toolTeam("{ steps: 10, mistakeRate: 0, cut: { rate: 0.6, length: 2, roles: [plan] } }");
    expect(armRecipe(cuts, "grpo", 1).sft?.cut).toEqual({ rate: 0.6, length: 2 });
    expect(armRecipe(cuts, "warm-start", 1).sft?.cut).toEqual({ rate: 0.6, length: 2, roles: ["plan"] });
    // A per-role stopping NLL becomes the largest for an arm whose one policy speaks for every role.
    const stops = toolTeam("{ steps: 10, mistakeRate: 0, stopAtNll: { tool: 0.05, plan: 0.2 } }");
    expect(armRecipe(stops, "grpo", 1).sft?.stopAtNll).toBe(0.2);
    expect(armRecipe(stops, "atgrpo-shared", 1).sft?.stopAtNll).toBe(0.2);
    expect(armRecipe(stops, "atgrpo-per-role", 1).sft?.stopAtNll).toEqual({ tool: 0.05, plan: 0.2 });
    expect(armRecipe(stops, "warm-start", 1).sft?.stopAtNll).toEqual({ tool: 0.05, plan: 0.2 });
  });

  it("MAGRPO gets round(8 · 16 / 40) = 3 tasks per step: N·K·(1 + K) = 40 samples per task vs N·T·K = 16", () => {
    const r = armRecipe(base, "magrpo", 1);
    expect(r.strategy).toMatchObject({ name: "magrpo", groupSize: 4, jointMode: "aligned" });
    expect(r.train.tasksPerStep).toBe(3);
    expect(r.team).toMatchObject({ specialisation: "per-role", turnOrder: "parallel" });
  });

  it("warm start only, AT-GRPO shared and per-role", () => {
    expect(armRecipe(base, "warm-start", 1).train.steps).toBe(0);
    expect(armRecipe(base, "atgrpo-shared", 1).team.specialisation).toBe("shared");
    expect(armRecipe(base, "atgrpo-per-role", 1)).toMatchObject({
      team: { specialisation: "per-role" },
      strategy: { name: "atgrpo", candidates: 4 },
    });
  });

  it("from a MAGRPO base (helper + main coding): the recipe itself, one agent writing the whole function, AT-GRPO at the same samples", () => {
    const magrpo = loadRecipeText(`
name: m
environment:
  name: coding
  options: { roles: helper-main, maxTurns: 1, train: [toy], test: toy, prompt: brief }
strategy: { name: magrpo, groupSize: 4 }
advantage: { normalizeStd: false }
sft: { steps: 10, mistakeRate: 0, cut: { rate: 0.6, length: 24, roles: [main] } }
train: { steps: 30, tasksPerStep: 8 }
`);
    const own = armRecipe(magrpo, "magrpo", 2);
    expect(own).toMatchObject({
      seed: 2,
      strategy: { name: "magrpo", groupSize: 4 },
      train: { tasksPerStep: 8 },
    });
    const single = armRecipe(magrpo, "grpo", 1);
    expect(single.environment.options).toMatchObject({ roles: "single", maxTurns: 2, train: ["toy"] });
    expect(single.strategy).toMatchObject({ groupSize: 4 });
    expect(["parallel", "grpo"]).toContain(single.strategy.name); // the GRPO strategy's name, old or new
    expect(single.sft?.cut).toEqual({ rate: 0.6, length: 24 });
    // MAGRPO: N·K = 8 samples per task and turn; AT-GRPO: N·T·K = 8 as well.
    expect(armRecipe(magrpo, "atgrpo-per-role", 1)).toMatchObject({
      strategy: { name: "atgrpo", candidates: 4 },
      train: { tasksPerStep: 8 },
    });
  });

  it("refuses a base recipe that is neither AT-GRPO nor MAGRPO", () => {
    const grpo = loadRecipeText("name: m\nenvironment: { name: plan-path }\nstrategy: { name: parallel }\n");
    expect(() => armRecipe(grpo, "grpo", 1)).toThrow(
      /must use strategy atgrpo or magrpo \(got (parallel|grpo)\)/,
    );
  });
});
