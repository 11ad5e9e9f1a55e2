/**
 * The windowed scoring and training graphs (`completionWindow`): left-padded sequences, the last
 * layer's queries, MLP and output head on the trailing columns that predict completion tokens only.
 * In float64 they must give the full graphs' numbers — logprobs, entropies, loss and every weight's
 * gradient — on a batch whose prompts and completions all differ in length (so each row's window
 * holds prompt columns of its own and the left padding differs per row). Generation's prefill runs
 * its last layer on the last column only (always): the full prefill's logits and the same keys and
 * values.
 */
import { aggregationWeights } from "@troupe/engine";
import { FULL_POLICY_LOSS } from "@troupe/engine/testing";
import { describe, expect, it } from "vitest";
import { graphWeightSpecs } from "../../src/model/fused-weights.ts";
import {
  buildCachedDecodeGraph,
  cacheKeyName,
  cacheValueName,
  newKeyName,
  newValueName,
} from "../../src/model/graphs.ts";
import { ropeTables } from "../../src/model/host-inputs.ts";
import { cacheDims, cachedAttentionBias, fixedCache } from "../../src/runtime/kv-cache.ts";
import { padBatch } from "../../src/runtime/padding.ts";
import { ModelRunner } from "../../src/runtime/runner.ts";
import type { LossSequenceInput } from "../../src/runtime/sequence-runner.ts";
import type { TypedArray } from "../../src/runtime/session.ts";
import { weightFeeds } from "../../src/runtime/weight-feeds.ts";
import { randomTokens, runGraph, TINY_CONFIGS, tinyWeights, toFloat64 } from "../fixtures.ts";
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

describe.each(Object.entries(TINY_CONFIGS))(
  "the prefill on the last column only, %s (float64)",
  (_, config) => {
    it("gives the full prefill's last-column logits and every column's keys and values", async () => {
      // Generation's prefill (DecodeRunner) always runs its last layer on the last column only.
      const weights = toFloat64(tinyWeights(config, 8));
      const rand = uniformStream(12);
      const prompts = [7, 3, 5].map((n) => randomTokens(n, config.vocab_size, rand));
      const padded = padBatch(prompts, "left");
      const { num_key_value_heads: KV, head_dim: D, num_hidden_layers: L } = config;
      const B = prompts.length;
      const T = padded.time;
      const empty = fixedCache(cacheDims(config, "float64"), B, 0);
      const rope = ropeTables(padded.positions, D, config.rope_theta, "float64");
      const feeds: Record<string, { data: TypedArray; dims: readonly number[] }> = {
        input_ids: { data: padded.ids, dims: [B, T] },
        rope_cos: { data: rope.cos, dims: [B, T, 1, D] },
        rope_sin: { data: rope.sin, dims: [B, T, 1, D] },
        attn_bias: { data: cachedAttentionBias(empty, padded.valid, T, "float64"), dims: [B, 1, 1, T, T] },
      };
      for (const [name, t] of weightFeedArrays(weights, config)) feeds[name] = t;
      for (let i = 0; i < L; i++) {
        feeds[cacheKeyName(i)] = { data: new Float64Array(0), dims: [B, KV, 0, D] };
        feeds[cacheValueName(i)] = { data: new Float64Array(0), dims: [B, KV, 0, D] };
      }
      const full = await runGraph(buildCachedDecodeGraph(config, "float64"), feeds);
      const last = await runGraph(buildCachedDecodeGraph(config, "float64", { lastColumnOnly: true }), feeds);
      expect(last.logits).toHaveLength(B * config.vocab_size);
      const logits = full.logits as Float64Array;
      (last.logits as Float64Array).forEach((x, i) => expect(Math.abs(x - logits[i]!)).toBeLessThan(1e-10));
      for (let i = 0; i < L; i++) {
        expect(last[newKeyName(i)]).toEqual(full[newKeyName(i)]);
        expect(last[newValueName(i)]).toEqual(full[newValueName(i)]);
      }
    });
  },
);

/** The decode graphs' weight inputs (fused groups) as host arrays, for `runGraph`. */
function weightFeedArrays(weights: ReturnType<typeof toFloat64>, config: (typeof TINY_CONFIGS)[string]) {
  const feeds = weightFeeds(weights, graphWeightSpecs(config, true), "float64", "test");
  return Object.entries(feeds).map(
    ([name, t]) => [name, { data: t.data as TypedArray, dims: t.dims }] as const,
  );
}
