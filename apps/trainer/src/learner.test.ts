import { samplingParams, teamPolicies } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { createEngine } from "./engines.ts";
import { recipeEnvironment } from "./envs.ts";
import { learnerStep } from "./learner.ts";
import { loadRecipeText } from "./recipe.ts";
import { runStrategy } from "./strategies.ts";
import { optimizerConfig, policySet, trainTasks } from "./train.ts";

const recipe = loadRecipeText(`
name: learner
seed: 3
environment:
  name: plan-path
  options: { roles: compact, maxTurns: 1, rows: 4, cols: 4, blockedFraction: 0.1, minPathLength: 2 }
team: { specialisation: shared }
model: { hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1 }
strategy: { name: atgrpo, candidates: 4 }
sampling: { temperature: 1, maxTokens: 6 }
optimizer: { lr: 0.01 }
train: { steps: 2, tasksPerStep: 3, epochs: 3 }
`);

describe("learnerStep epochs", () => {
  it("epochs = 3 is exactly three trainStep calls on the same samples; later epochs are off-policy", async () => {
    const { trainerEnv, team } = recipeEnvironment(recipe);
    const [a, b] = await Promise.all([0, 1].map(() => createEngine(recipe, teamPolicies(team))));
    const rollout = await runStrategy(
      {
        runId: "learner",
        step: 0,
        seed: recipe.seed,
        env: trainerEnv.env,
        team,
        policies: policySet(a!, team, 0),
        sampling: samplingParams(recipe.sampling),
      },
      trainTasks(trainerEnv, recipe, 0),
      recipe.strategy,
    );
    // An untrained model's plans all fail alike (zero advantages): give them ±1 so there is a gradient.
    const samples = rollout.samples.map((s, i) => ({ ...s, advantage: i % 2 === 0 ? 1 : -1 }));
    const config = { loss: recipe.loss, optimizer: optimizerConfig(recipe), microBatchSize: 16 };
    expect(config.optimizer.totalSteps).toBe(6); // the schedule counts updates: steps × epochs

    const viaEpochs = await learnerStep(a!, samples, { ...config, epochs: 3 });
    const byHand = [];
    for (let epoch = 0; epoch < 3; epoch++) byHand.push(await learnerStep(b!, samples, config));
    expect(viaEpochs.get("shared")).toEqual(byHand[2]!.get("shared"));
    expect(await a!.save("shared")).toEqual(await b!.save("shared"));
    // Epoch 1 is on-policy (old log-probs are the sampler's: ratio 1, nothing clipped); by epoch 3
    // the policy has moved away from the sampler's.
    expect(byHand[0]!.get("shared")!.approxKl).toBeLessThan(1e-6);
    expect(byHand[2]!.get("shared")!.approxKl).toBeGreaterThan(10 * byHand[0]!.get("shared")!.approxKl);
    await Promise.all([a!.close(), b!.close()]);
  }, 60_000);
});
