/**
 * The recipe's sampling (sampling.ts): a role's own fields over the team's, for rollouts and for
 * held-out evaluation, the longest answer a memory plan must hold, and the roles it may name.
 */
import { samplingParams } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { recipeEnvironment } from "../src/envs.ts";
import { loadRecipeText } from "../src/recipe.ts";
import { checkRoleSampling, evalSampling, longestAnswer, rolloutSampling } from "../src/sampling.ts";

describe("recipe sampling per role", () => {
  const base =
    "name: s\nenvironment: { name: plan-path, options: { roles: compact } }\nstrategy: { name: atgrpo }\nsampling: { temperature: 1, maxTokens: 16 }\n";
  it("lays a role's own fields over the team's, for rollouts and for evaluation", () => {
    const recipe = loadRecipeText(base, [
      "sampling.roles.fixer.maxTokens=24",
      "sampling.roles.fixer.temperature=0.7",
      "sampling.roles.fixer.evalTemperature=0.2",
      "train.evalTemperature=0",
    ]);
    const rollout = rolloutSampling(recipe);
    expect(rollout.sampling).toEqual(samplingParams({ temperature: 1, maxTokens: 16 }));
    expect(rollout.roleSampling).toEqual({ fixer: samplingParams({ temperature: 0.7, maxTokens: 24 }) });
    const held = evalSampling(recipe);
    expect(held.sampling.temperature).toBe(0);
    expect(held.roleSampling).toEqual({ fixer: samplingParams({ temperature: 0.2, maxTokens: 24 }) });
    expect(evalSampling(recipe, 1).roleSampling?.fixer?.temperature).toBe(1);
    expect(longestAnswer(recipe)).toBe(24);
    expect(rolloutSampling(loadRecipeText(base)).roleSampling).toBeUndefined();
  });
  it("refuses an unknown field and a role the team does not have, each in one line", () => {
    expect(() => loadRecipeText(base, ["sampling.roles.fixer.temprature=0.5"])).toThrow(
      /unknown key "sampling\.roles\.fixer\.temprature"/,
    );
    const recipe = loadRecipeText(base, ["sampling.roles.tool.maxTokens=4"]);
    expect(() => checkRoleSampling(recipe, recipeEnvironment(recipe).team)).toThrow(
      'recipe: sampling.roles.tool: the team has no role "tool" (roles: planner, fixer)',
    );
  });
});
