/**
 * The first PPO epoch's ratio r = π_θ(token) / π_old(token) on a rollout, for several sampling
 * settings, with the two choices of ℓ_old:
 *   before — ℓ_old = the sampler's log q (after temperature, top-k, top-p), what the learner used;
 *   after  — ℓ_old = the learner's scoring pass, log π_θ (what `learnerStep` does now).
 * π_θ is the training graph's own log-prob (the number the loss differentiates), so "after" also
 * shows how closely the scoring graph reproduces the training graph.
 *
 * A policy is warm-started first (the recipe's SFT, `--sft-steps` of it, cached in `--store`) so
 * the distributions are peaked as in a real run; an untrained model is near uniform, where
 * temperature hardly changes anything. Prints one JSON line per setting: ratio min / max / mean,
 * the fraction of tokens outside the clip range [1 − 0.2, 1 + 0.2], and the approx-KL and clip
 * fraction of one `trainStep` with each ℓ_old (weights restored in between).
 *
 *   npx tsx --conditions=@troupe/source apps/trainer/bench/on-policy-ratio.ts [--sft-steps 100 --store /tmp/ratio]
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type Sample, samplingParams, teamPolicies } from "@troupe/core";
import { aggregationWeights } from "@troupe/engine";
import type { OnnxEngine } from "@troupe/engine-onnx";
import { runStrategy } from "@troupe/rl";
import { FileStore } from "@troupe/storage/node";
import { resolveRecipePath } from "../src/commands/workspace.ts";
import { createEngine, policySet } from "../src/engines.ts";
import { recipeEnvironment } from "../src/envs.ts";
import { loadRecipeText } from "../src/recipe.ts";
import { batchesByPolicy, learnerStep } from "../src/run/learner.ts";
import { trainTasks } from "../src/run/tasks.ts";
import { optimizerConfig } from "../src/run/train.ts";
import { warmStart } from "../src/run/warm-start.ts";

const { values } = parseArgs({
  options: {
    recipe: { type: "string", default: "default" },
    "sft-steps": { type: "string", default: "100" },
    store: { type: "string", default: join(tmpdir(), "troupe-ratio-bench") },
    tasks: { type: "string", default: "16" },
  },
});
const recipe = loadRecipeText(readFileSync(resolveRecipePath(values.recipe), "utf8"), [
  `sft.steps=${values["sft-steps"]}`,
  `train.tasksPerStep=${values.tasks}`,
]);
const settings: Record<string, Partial<ReturnType<typeof samplingParams>>> = {
  "T=1": { temperature: 1 },
  "T=0.7": { temperature: 0.7 },
  "T=0.5": { temperature: 0.5 },
  "top-p 0.9": { topP: 0.9 },
  "top-k 5": { topK: 5 },
  "T=0.7 top-p 0.9": { temperature: 0.7, topP: 0.9 },
};

const { trainerEnv, team } = recipeEnvironment(recipe);
const engine = (await createEngine(recipe, teamPolicies(team))) as OnnxEngine;
const quiet = { step() {}, eval() {}, note: (m: string) => console.error(m) };
await warmStart({ recipe, trainerEnv, team, engine, store: new FileStore(values.store), reporter: quiet });
const policyId = teamPolicies(team)[0]!;
const loss = recipe.loss;
const config = { loss, optimizer: optimizerConfig(recipe), microBatchSize: recipe.train.microBatchSize };

for (const [name, overrides] of Object.entries(settings)) {
  const sampling = samplingParams({ ...recipe.sampling, ...overrides });
  const rollout = await runStrategy(
    {
      runId: "ratio",
      step: 0,
      seed: recipe.seed,
      env: trainerEnv.env,
      team,
      policies: policySet(engine, team, 0),
      sampling,
    },
    trainTasks(trainerEnv, recipe, 0),
    recipe.strategy,
  );
  // ±1 advantages so that every token's ratio enters the loss (an untrained group is often all-equal).
  const samples: Sample[] = rollout.samples
    .filter((s) => s.provenance.policyId === policyId && s.completionTokenIds.length > 0)
    .map((s, i) => ({ ...s, advantage: i % 2 === 0 ? 1 : -1 }));
  const sequences = batchesByPolicy(samples).get(policyId)!;
  const sampled = samples.map((s) => s.samplingLogprobs);
  const scored = await engine.logprobs(policyId, sequences);
  // The training graph's ℓ at the current weights (one micro-batch holding the whole batch).
  const masks = sequences.map((s) => s.completionTokenIds.map(() => 1));
  const weights = aggregationWeights(masks, loss.aggregation);
  const trained = (
    await engine.runnerOf(policyId).sequences.trainMicroBatch(
      engine.weightsOf(policyId),
      sequences.map((s, b) => ({
        ...s,
        oldLogprobs: scored[b]!,
        advantages: s.completionTokenIds.map(() => s.advantage),
        mask: masks[b]!,
        tokenWeights: weights[b]!,
      })),
      loss,
    )
  ).logprobs;
  const ratios = (old: number[][]) => {
    const r = trained.flatMap((row, b) => row.map((lp, t) => Math.exp(lp - old[b]![t]!)));
    return {
      min: round(Math.min(...r)),
      max: round(Math.max(...r)),
      mean: round(r.reduce((a, x) => a + x, 0) / r.length),
      maxAbsLogRatio: Math.max(...r.map((x) => Math.abs(Math.log(x)))),
      outsideClip: round(r.filter((x) => x < 1 - loss.clipLow || x > 1 + loss.clipHigh).length / r.length),
    };
  };
  const saved = await engine.save(policyId);
  const beforeMetrics = await engine.trainStep(
    policyId,
    sequences.map((s, b) => ({ ...s, oldLogprobs: sampled[b]! })),
    config,
  );
  await engine.load(policyId, saved);
  const afterMetrics = (await learnerStep(engine, samples, config)).get(policyId)!;
  await engine.load(policyId, saved);
  console.log(
    JSON.stringify({
      setting: name,
      tokens: trained.flat().length,
      before: {
        ratio: ratios(sampled),
        approxKl: round(beforeMetrics.approxKl),
        clipFraction: round(beforeMetrics.clipFraction),
      },
      after: {
        ratio: ratios(scored),
        approxKl: afterMetrics.approxKl,
        clipFraction: afterMetrics.clipFraction,
      },
    }),
  );
}
await engine.close();

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
