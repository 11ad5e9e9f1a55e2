/**
 * Held-out evaluation: one episode per task with the given policies, reported as the success rate
 * with its 95% Wilson interval, the mean team return and the mean turns; the same policies, tasks
 * and seed give the same result.
 */
import { type PolicySet, teamPolicies } from "@troupe/core";
import { ScriptedPolicy } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { createEngine, policySet } from "../src/engines.ts";
import { recipeEnvironment } from "../src/envs.ts";
import { evaluate } from "../src/evaluate.ts";
import { loadRecipeText } from "../src/recipe.ts";
import { wilson } from "../src/reports/statistics.ts";
import { evalTasks } from "../src/run/tasks.ts";
import { evalSampling } from "../src/sampling.ts";
import { TINY_PLAN_PATH } from "./tiny.ts";

const recipe = loadRecipeText(
  `name: ev\nseed: 2\n${TINY_PLAN_PATH}\nstrategy: { name: atgrpo }\nsampling: { maxTokens: 8 }\ntrain: { evalTasks: 6 }\n`,
);
const { trainerEnv, team } = recipeEnvironment(recipe);
const tasks = evalTasks(trainerEnv, recipe);

describe("evaluate", () => {
  it("a team that never answers validly: no task solved, the interval Wilson's for 0 of n", async () => {
    const policies: PolicySet = Object.fromEntries(
      teamPolicies(team).map((id) => [id, new ScriptedPolicy(id, () => [{ text: "zzz", weight: 1 }])]),
    );
    const result = await evaluate({
      trainerEnv,
      team,
      policies,
      tasks,
      sampling: evalSampling(recipe),
      seed: 1,
    });
    expect(result).toMatchObject({ tasks: 6, successes: 0, successRate: 0, ci95: wilson(0, 6) });
    expect(result.meanTurns).toBeGreaterThanOrEqual(1);
    expect(result.meanTurns).toBeLessThanOrEqual(2); // the tiny recipe's maxTurns
    expect(result.meanTeamReturn).toBeLessThan(0);
  });

  it("a model's evaluation: consistent counts and interval, the same on a second call, none for no tasks", async () => {
    const engine = await createEngine(recipe, teamPolicies(team));
    try {
      const options = {
        trainerEnv,
        team,
        policies: policySet(engine, team, 0),
        tasks,
        sampling: evalSampling(recipe),
        seed: 7,
      };
      const result = await evaluate(options);
      expect(result.tasks).toBe(6);
      expect(result.successRate).toBe(result.successes / 6);
      expect(result.ci95).toEqual(wilson(result.successes, 6));
      expect(await evaluate(options)).toEqual(result);
      expect(await evaluate({ ...options, tasks: [] })).toEqual({
        tasks: 0,
        successes: 0,
        successRate: 0,
        ci95: wilson(0, 0),
        meanTeamReturn: 0,
        meanTurns: 0,
      });
    } finally {
      await engine.close();
    }
  });
});
