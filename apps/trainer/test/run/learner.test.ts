import { type SamplingParams, samplingParams, teamPolicies } from "@troupe/core";
import type { Engine, TrainSequence, TrainStepConfig } from "@troupe/engine";
import { aggregationWeights, policyLoss } from "@troupe/engine";
import type { OnnxEngine } from "@troupe/engine-onnx";
import { runStrategy } from "@troupe/rl";
import { describe, expect, it } from "vitest";
import { createEngine, policySet } from "../../src/engines.ts";
import { recipeEnvironment } from "../../src/envs.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { batchesByPolicy, learnerStep } from "../../src/run/learner.ts";
import { trainTasks } from "../../src/run/tasks.ts";
import { optimizerConfig } from "../../src/run/train.ts";
import { tinyPlanPath } from "../tiny.ts";

const recipe = loadRecipeText(`
name: learner
seed: 3
${tinyPlanPath({ maxTurns: 1 })}
team: { specialisation: shared }
strategy: { name: atgrpo, candidates: 4 }
sampling: { temperature: 1, maxTokens: 6 }
optimizer: { lr: 0.01 }
train: { steps: 2, tasksPerStep: 3, epochs: 3 }
`);

/** The samples of one rollout step of the recipe on `engine`, its sampling settings overridden. */
async function rollout(engine: Engine, overrides: Partial<SamplingParams> = {}) {
  const { trainerEnv, team } = recipeEnvironment(recipe);
  const out = await runStrategy(
    {
      runId: "learner",
      step: 0,
      seed: recipe.seed,
      env: trainerEnv.env,
      team,
      policies: policySet(engine, team, 0),
      sampling: samplingParams({ ...recipe.sampling, ...overrides }),
    },
    trainTasks(trainerEnv, recipe, 0),
    recipe.strategy,
  );
  return out.samples;
}

/** One rollout step of the recipe on `engine`, with advantages ±1 in turn: an untrained model's
 * plans all fail alike (zero advantages), so this gives the update a gradient. */
async function signedSamples(engine: Engine, overrides: Partial<SamplingParams> = {}) {
  return (await rollout(engine, overrides)).map((s, i) => ({ ...s, advantage: i % 2 === 0 ? 1 : -1 }));
}

describe("learnerStep epochs", () => {
  it("epochs = 3 is one scoring pass then three trainStep calls with ℓ_old fixed; later epochs are off-policy", async () => {
    const { team } = recipeEnvironment(recipe);
    const [a, b] = await Promise.all([0, 1].map(() => createEngine(recipe, teamPolicies(team))));
    const samples = await signedSamples(a!);
    const config = { loss: recipe.loss, optimizer: optimizerConfig(recipe), microBatchSize: 16 };
    expect(config.optimizer.totalSteps).toBe(6); // the schedule counts updates: steps × epochs

    const viaEpochs = await learnerStep(a!, samples, { ...config, epochs: 3 });
    // By hand: score once with the weights before the update, then three updates on that ℓ_old.
    const sequences = batchesByPolicy(samples).get("shared")!;
    const old = await b!.logprobs("shared", sequences);
    const batch = sequences.map((s, i) => ({ ...s, oldLogprobs: old[i]! }));
    const byHand = [];
    for (let epoch = 0; epoch < 3; epoch++) byHand.push(await b!.trainStep("shared", batch, config));
    expect(viaEpochs.get("shared")).toEqual(byHand[2]);
    expect(await a!.save("shared")).toEqual(await b!.save("shared"));
    // Epoch 1 is on-policy (ratio 1, nothing clipped); by epoch 3 the policy has moved away from ℓ_old.
    expect(Math.abs(byHand[0]!.approxKl)).toBeLessThan(1e-7);
    expect(byHand[0]!.clipFraction).toBe(0);
    expect(byHand[2]!.approxKl).toBeGreaterThan(1e-4);
    // A second learnerStep re-scores: its ℓ_old is the moved policy, so its ratio is 1 again.
    const again = (await learnerStep(a!, samples, config)).get("shared")!;
    expect(Math.abs(again.approxKl)).toBeLessThan(1e-7);
    expect(again.clipFraction).toBe(0);
    await Promise.all([a!.close(), b!.close()]);
  }, 60_000);
});

describe("learnerStep on-policy ratio", () => {
  // Sampling settings whose distribution q differs from the softmax π the learner trains.
  const settings: readonly (readonly [string, Partial<SamplingParams>])[] = [
    ["T=1 (q = π)", { temperature: 1 }],
    ["T=0.7", { temperature: 0.7 }],
    ["T=0.5", { temperature: 0.5 }],
    ["top-p 0.9", { topP: 0.9 }],
    ["top-k 3", { topK: 3 }],
  ];

  it.each(settings)(
    "the first epoch's ratio π_θ/π_old is 1 on every token at %s",
    async (_name, overrides) => {
      const { team } = recipeEnvironment(recipe);
      const engine = (await createEngine(recipe, teamPolicies(team))) as OnnxEngine;
      // Sharpen the untrained model first (a few updates pushing its own greedy plans up), so that
      // temperature and truncation change the distribution materially, as after a warm start.
      const greedy = await rollout(engine, { temperature: 0 });
      const sharpen = batchesByPolicy(greedy.map((s) => ({ ...s, advantage: 1 }))).get("shared")!;
      for (let i = 0; i < 5; i++) {
        const old = await engine.logprobs("shared", sharpen);
        await engine.trainStep(
          "shared",
          sharpen.map((s, b) => ({ ...s, advantage: 1, oldLogprobs: old[b]! })),
          { loss: recipe.loss, optimizer: optimizerConfig(recipe), microBatchSize: 16 },
        );
      }
      const samples = await signedSamples(engine, overrides);
      // Spy on the one trainStep: the ℓ_old it gets, and the training graph's own ℓ at the same
      // weights (the number the loss differentiates) computed just before the update.
      let seen: { old: number[][]; trained: number[][] } | undefined;
      const spy = new Proxy(engine, {
        get(target, key) {
          if (key !== "trainStep") {
            const v = Reflect.get(target, key, target);
            return typeof v === "function" ? v.bind(target) : v;
          }
          return async (policyId: string, batch: readonly TrainSequence[], config: TrainStepConfig) => {
            const masks = batch.map((s) => s.completionTokenIds.map(() => 1));
            const weights = aggregationWeights(masks, config.loss.aggregation);
            const { logprobs } = await target.runnerOf(policyId).sequences.trainMicroBatch(
              target.weightsOf(policyId),
              batch.map((s, b) => ({
                ...s,
                advantages: masks[b]!.map(() => s.advantage),
                mask: masks[b]!,
                tokenWeights: weights[b]!,
              })),
              config.loss,
            );
            seen = { old: batch.map((s) => [...s.oldLogprobs]), trained: logprobs };
            return target.trainStep(policyId, batch, config);
          };
        },
      });
      const metrics = (
        await learnerStep(spy, samples, {
          loss: recipe.loss,
          optimizer: optimizerConfig(recipe),
          microBatchSize: 16,
        })
      ).get("shared")!;
      const sampled = samples.filter((s) => s.completionTokenIds.length > 0).map((s) => s.samplingLogprobs);
      const maxGap = (a: number[][], b: readonly (readonly number[])[]) =>
        Math.max(...a.flatMap((row, i) => row.map((x, t) => Math.abs(x - b[i]![t]!))));
      // |log r| = |ℓ_θ − ℓ_old| is float32 rounding between the scoring and training graphs (≈ 2e-6).
      expect(maxGap(seen!.trained, seen!.old)).toBeLessThan(1e-5);
      expect(metrics.clipFraction).toBe(0);
      expect(Math.abs(metrics.approxKl)).toBeLessThan(1e-7);
      // The sampler's log q (kept in the Sample) would have given ratios far from 1, except at T = 1.
      const gap = maxGap(seen!.old, sampled);
      if (overrides.temperature === 1) expect(gap).toBeLessThan(1e-5);
      else expect(gap).toBeGreaterThan(0.05);
      await engine.close();
    },
    60_000,
  );
});

describe("learnerStep KL to a reference policy", () => {
  it("scores ℓ_ref with the reference engine and trains on it: the same update and k3 value as by hand", async () => {
    const { team } = recipeEnvironment(recipe);
    const [a, b] = await Promise.all([0, 1].map(() => createEngine(recipe, teamPolicies(team))));
    // A reference that differs from the policy: the same shapes from another init seed.
    const ref = await createEngine({ ...recipe, seed: recipe.seed + 1 }, teamPolicies(team));
    const samples = await signedSamples(a!);
    const loss = { ...recipe.loss, klCoef: 0.5 };
    const config = { loss, optimizer: optimizerConfig(recipe), microBatchSize: 16 };
    await expect(learnerStep(a!, samples, config)).rejects.toThrow(
      /loss\.klCoef is 0\.5 but no reference policy was given/,
    );

    const got = (await learnerStep(a!, samples, { ...config, reference: ref })).get("shared")!;
    const sequences = batchesByPolicy(samples).get("shared")!;
    const [old, refLp] = await Promise.all([
      b!.logprobs("shared", sequences),
      ref.logprobs("shared", sequences),
    ]);
    const byHand = await b!.trainStep(
      "shared",
      sequences.map((s, i) => ({ ...s, oldLogprobs: old[i]!, refLogprobs: refLp[i]! })),
      config,
    );
    expect(got).toEqual(byHand);
    expect(await a!.save("shared")).toEqual(await b!.save("shared"));
    // The engine's KL is the reference loss's token-mean k3 at ℓ = ℓ_old (epoch 1 is on-policy):
    // Σ_t w_t (e^δ − δ − 1), δ = ℓ_ref − ℓ, w_t = 1 / tokens.
    const expected = policyLoss(
      sequences.map((s, i) => ({
        logprobs: old[i]!,
        oldLogprobs: old[i]!,
        refLogprobs: refLp[i]!,
        advantage: s.advantage,
        mask: s.completionTokenIds.map(() => 1),
      })),
      loss,
    ).kl;
    expect(expected).toBeGreaterThan(1e-4);
    expect(got.kl).toBeCloseTo(expected, 5);
    // A reference with the policy's own weights has KL 0.
    const same = await createEngine(recipe, teamPolicies(team));
    await same.load("shared", await b!.save("shared"));
    const zero = (await learnerStep(b!, samples, { ...config, reference: same })).get("shared")!;
    expect(Math.abs(zero.kl)).toBeLessThan(1e-9);
    await Promise.all([a!.close(), b!.close(), ref.close(), same.close()]);
  }, 60_000);
});
