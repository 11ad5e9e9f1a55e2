/**
 * The windowed scoring and training graphs (`completionWindow`): left-padded sequences, the last
 * layer's queries, MLP and output head on the trailing columns that predict completion tokens only.
 * In float64 they must give the full graphs' numbers — logprobs, entropies, loss and every weight's
 * gradient — on a batch whose prompts and completions all differ in length (so each row's window
 * holds prompt columns of its own and the left padding differs per row). Generation's prefill then
 * runs its last layer on the last column only: the same completions.
 */
import { samplingParams } from "@troupe/core";
import { aggregationWeights, ByteTokenizer, tinyQwenConfig } from "@troupe/engine";
import { FULL_POLICY_LOSS, SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { describe, expect, it } from "vitest";
import { generateBatch } from "../../src/runtime/generate.ts";
import { ModelRunner } from "../../src/runtime/runner.ts";
import type { LossSequenceInput } from "../../src/runtime/sequence-runner.ts";
import { randomTokens, TINY_CONFIGS, tinyWeights, toFloat64 } from "../fixtures.ts";
import { uniformStream } from "../gradcheck.ts";

function batch(vocab: number, seed: number): LossSequenceInput[] {
  const rand = uniformStream(seed);
  const shapes = [
    [7, 2],
    [2, 5],
    [4, 1],
    [3, 4],
  ] as const;
  const seqs = shapes.map(([p, c]) => ({
    promptTokenIds: randomTokens(p, vocab, rand),
    completionTokenIds: randomTokens(c, vocab, rand),
  }));
  const masks = seqs.map((s, b) => s.completionTokenIds.map((_, j) => (b === 1 && j === 2 ? 0 : 1)));
  const tokenWeights = aggregationWeights(masks, FULL_POLICY_LOSS.aggregation);
  return seqs.map((s, b) => ({
    ...s,
    oldLogprobs: s.completionTokenIds.map(() => -2 + rand()),
    refLogprobs: s.completionTokenIds.map(() => -2 + rand()),
    advantages: s.completionTokenIds.map(() => 2 * rand() - 1),
    mask: masks[b]!,
    tokenWeights: tokenWeights[b]!,
  }));
}

describe.each(Object.entries(TINY_CONFIGS))("completion window, %s (float64)", (_, config) => {
  const weights = toFloat64(tinyWeights(config, 5));
  const full = new ModelRunner(config, "float64");
  const windowed = new ModelRunner(config, "float64", "windowed", { completionWindow: true });
  const sequences = batch(config.vocab_size, 17);

  it("scores every completion token as the full graph does", async () => {
    const a = await full.sequences.score(weights, sequences);
    const b = await windowed.sequences.score(weights, sequences);
    expect(b.logprobs.map((r) => r.length)).toEqual([2, 5, 1, 4]);
    for (let i = 0; i < sequences.length; i++) {
      for (let j = 0; j < a.logprobs[i]!.length; j++) {
        expect(b.logprobs[i]![j]).toBeCloseTo(a.logprobs[i]![j]!, 11);
        expect(b.entropies[i]![j]).toBeCloseTo(a.entropies[i]![j]!, 11);
      }
    }
  });

  it("gives the full graph's loss, metrics and gradient of every weight", async () => {
    const a = await full.sequences.trainMicroBatch(weights, sequences, FULL_POLICY_LOSS);
    const b = await windowed.sequences.trainMicroBatch(weights, sequences, FULL_POLICY_LOSS);
    expect(a.clipped).toBeGreaterThan(0); // the batch exercises clipping
    for (const key of ["loss", "pgLoss", "kl", "entropy", "clipped", "oldMinusNew"] as const)
      expect(b[key], key).toBeCloseTo(a[key], 11);
    for (const [name, g] of a.grads) {
      const h = b.grads.get(name)!;
      let maxDiff = 0;
      let scale = 0;
      for (let i = 0; i < g.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(g[i]! - h[i]!));
        scale = Math.max(scale, Math.abs(g[i]!));
      }
      expect(scale, name).toBeGreaterThan(0);
      expect(maxDiff / scale, name).toBeLessThan(1e-10);
    }
  });
});

describe("completion window, generation", () => {
  it("the prefill on the last column only samples the same completions, with the same logprobs", async () => {
    const config = tinyQwenConfig(SMALL_QWEN_SHAPE);
    const weights = tinyWeights(config, 9);
    const tokenizer = new ByteTokenizer();
    const rand = uniformStream(4);
    const prompts = Array.from({ length: 9 }, () => randomTokens(3 + Math.floor(rand() * 12), 256, rand));
    const seeds = prompts.map((_, b) => 40 + b);
    const sampling = samplingParams({ maxTokens: 10, stopTokenIds: [7, 77] });
    const full = new ModelRunner(config);
    const windowed = new ModelRunner(config, "float32", "windowed", { completionWindow: true });
    const a = await generateBatch(full, weights, tokenizer, prompts, seeds, sampling);
    const b = await generateBatch(windowed, weights, tokenizer, prompts, seeds, sampling);
    expect(new Set(a.map((c) => c.tokenIds.length)).size).toBeGreaterThan(1);
    for (let i = 0; i < prompts.length; i++) {
      expect(b[i]!.tokenIds, `row ${i}`).toEqual(a[i]!.tokenIds);
      b[i]!.logprobs.forEach((lp, j) => expect(lp).toBeCloseTo(a[i]!.logprobs[j]!, 5));
    }
    await full.release();
    await windowed.release();
  });
});
