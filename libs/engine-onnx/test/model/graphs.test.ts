import { aggregationWeights, policyLoss } from "@troupe/engine";
import { FULL_POLICY_LOSS } from "@troupe/engine/testing";
import { describe, expect, it } from "vitest";
import { ModelRunner } from "../../src/runtime/runner.ts";
import type { LossSequenceInput } from "../../src/runtime/sequence-runner.ts";
import type { HostWeights } from "../../src/runtime/weight-feeds.ts";
import { randomTokens, TINY_CONFIGS, tinyWeights, toFloat64 } from "../fixtures.ts";
import { uniformStream } from "../gradcheck.ts";

/** A batch whose old log-probs are the model's own, perturbed so some ratios clip. */
async function lossBatch(
  runner: ModelRunner,
  weights: HostWeights,
  seed: number,
): Promise<LossSequenceInput[]> {
  const rand = uniformStream(seed);
  const V = runner.config.vocab_size;
  const seqs = [
    { promptTokenIds: randomTokens(4, V, rand), completionTokenIds: randomTokens(5, V, rand) },
    { promptTokenIds: randomTokens(2, V, rand), completionTokenIds: randomTokens(3, V, rand) },
    { promptTokenIds: randomTokens(3, V, rand), completionTokenIds: randomTokens(6, V, rand) },
  ];
  const scored = await runner.sequences.score(weights, seqs);
  const masks = seqs.map((s, b) => s.completionTokenIds.map((_, j) => (b === 2 && j === 1 ? 0 : 1)));
  const tokenWeights = aggregationWeights(masks, FULL_POLICY_LOSS.aggregation);
  return seqs.map((s, b) => ({
    ...s,
    oldLogprobs: scored.logprobs[b]!.map((lp) => lp + 0.6 * (rand() - 0.5)),
    refLogprobs: scored.logprobs[b]!.map((lp) => lp + 0.4 * (rand() - 0.5)),
    advantages: s.completionTokenIds.map(() => 2 * rand() - 1),
    mask: masks[b]!,
    tokenWeights: tokenWeights[b]!,
  }));
}

describe.each(Object.entries(TINY_CONFIGS).slice(0, 3))("training graph, %s (float64)", (_, config) => {
  const weights = toFloat64(tinyWeights(config, 3));
  const runner = new ModelRunner(config, "float64");

  it("loss and metrics equal policyLoss of @troupe/engine on the same numbers", async () => {
    const batch = await lossBatch(runner, weights, 9);
    const result = await runner.sequences.trainMicroBatch(weights, batch, FULL_POLICY_LOSS);
    const reference = policyLoss(
      batch.map((s, b) => ({
        logprobs: result.logprobs[b]!,
        oldLogprobs: s.oldLogprobs,
        refLogprobs: s.refLogprobs,
        advantage: s.advantages,
        mask: s.mask,
        entropies: result.entropies[b]!,
      })),
      FULL_POLICY_LOSS,
    );
    expect(reference.clipFraction).toBeGreaterThan(0); // the batch exercises clipping
    expect(result.loss).toBeCloseTo(reference.loss, 10);
    expect(result.pgLoss).toBeCloseTo(reference.pgLoss, 10);
    expect(result.kl).toBeCloseTo(reference.kl, 10);
    expect(result.entropy).toBeCloseTo(reference.entropy, 10);
    expect(result.clipped / reference.tokens).toBeCloseTo(reference.clipFraction, 12);
    expect(result.oldMinusNew / reference.tokens).toBeCloseTo(reference.approxKl, 10);
  });

  it("every weight's gradient matches central finite differences", async () => {
    const batch = await lossBatch(runner, weights, 21);
    const base = await runner.sequences.trainMicroBatch(weights, batch, FULL_POLICY_LOSS);
    const rand = uniformStream(99);
    const h = 1e-5;
    let maxRelError = 0;
    let checked = 0;
    for (const [name, t] of weights) {
      // Three elements of every tensor (all of its gradient is computed; a sample is checked).
      for (let k = 0; k < 3; k++) {
        const i = Math.floor(rand() * t.data.length);
        const x0 = t.data[i]!;
        t.data[i] = x0 + h;
        const plus = (await runner.sequences.trainMicroBatch(weights, batch, FULL_POLICY_LOSS)).loss;
        t.data[i] = x0 - h;
        const minus = (await runner.sequences.trainMicroBatch(weights, batch, FULL_POLICY_LOSS)).loss;
        t.data[i] = x0;
        const numeric = (plus - minus) / (2 * h);
        const analytic = base.grads.get(name)![i]!;
        maxRelError = Math.max(maxRelError, Math.abs(numeric - analytic) / Math.max(1e-3, Math.abs(numeric)));
        checked++;
      }
      expect(base.grads.get(name)!.length).toBe(t.data.length);
    }
    expect(checked).toBe(3 * weights.size);
    expect(maxRelError).toBeLessThan(1e-6);
  });
});
