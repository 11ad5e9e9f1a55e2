/**
 * The decode forwards (src/model/decode.ts) against full recomputation: after a left-padded
 * prefill, every next-token distribution equals the scored log-probs of the same tokens, through
 * the growing cache of the exported graph (Concat of the past), and through the pre-allocated cache
 * of the prefill and single-token step (weights as inputs and baked in, spare capacity masked).
 */
import { logSoftmax, type QwenConfig, tinyQwenConfig } from "@troupe/engine";
import { describe, expect, it } from "vitest";
import type { FloatDType } from "../../src/graph/builder.ts";
import { graphWeightSpecs } from "../../src/model/fused-weights.ts";
import {
  buildCachedDecodeGraph,
  buildDecodeGraph,
  pastKeyName,
  pastValueName,
  presentKeyName,
  presentValueName,
} from "../../src/model/graphs.ts";
import { attentionBias, ropeTables } from "../../src/model/host-inputs.ts";
import { padBatch } from "../../src/runtime/padding.ts";
import { ModelRunner } from "../../src/runtime/runner.ts";
import { GraphSession, type ort, tensor } from "../../src/runtime/session.ts";
import { type HostWeights, weightFeeds } from "../../src/runtime/weight-feeds.ts";
import { scoredCompletions, TINY_CONFIGS, tinyWeights } from "../fixtures.ts";
import { uniformStream } from "../gradcheck.ts";

describe.each(Object.entries(TINY_CONFIGS))("%s", (_, config) => {
  const weights = tinyWeights(config, 11);
  const rand = uniformStream(5);
  const V = config.vocab_size;
  const D = config.head_dim;
  const L = config.num_hidden_layers;

  /** One run of the exported graph: T new tokens per row after `past`, returning logits and the grown past. */
  async function growingCacheRun(
    session: GraphSession,
    w: HostWeights,
    ids: BigInt64Array,
    positions: Int32Array,
    keyValid: Uint8Array,
    past: { length: number; keys: ort.Tensor[]; values: ort.Tensor[] },
    B: number,
  ) {
    const T = ids.length / B;
    const rope = ropeTables(positions, D, config.rope_theta, "float32");
    const feeds: Record<string, ort.Tensor> = {
      ...weightFeeds(w, graphWeightSpecs(config, true), "float32", "test"),
      input_ids: tensor("int64", ids, [B, T]),
      rope_cos: tensor("float32", rope.cos, [B, T, 1, D]),
      rope_sin: tensor("float32", rope.sin, [B, T, 1, D]),
      attn_bias: tensor("float32", attentionBias(keyValid, B, past.length, T, "float32"), [
        B,
        1,
        1,
        T,
        past.length + T,
      ]),
    };
    for (let i = 0; i < L; i++) {
      feeds[pastKeyName(i)] = past.keys[i]!;
      feeds[pastValueName(i)] = past.values[i]!;
    }
    const out = await session.run(feeds);
    return {
      logits: out.logits!.data as Float32Array,
      past: {
        length: past.length + T,
        keys: Array.from({ length: L }, (_, i) => out[presentKeyName(i)]!),
        values: Array.from({ length: L }, (_, i) => out[presentValueName(i)]!),
      },
    };
  }

  it("decoding through each cache equals full recomputation", async () => {
    const runner = new ModelRunner(config);
    const { prompts, completions, scored } = await scoredCompletions(runner, weights, rand);
    const padded = padBatch(prompts, "left");
    const B = prompts.length;
    const expectScored = (logits: Float32Array | Float64Array, j: number) => {
      for (let b = 0; b < B; b++) {
        const row = logSoftmax(logits.subarray(b * V, (b + 1) * V));
        expect(Math.abs(row[completions[b]![j]!]! - scored.logprobs[b]![j]!)).toBeLessThan(1e-5);
      }
    };
    const stepIds = (j: number) => BigInt64Array.from(completions.map((c) => BigInt(c[j]!)));
    const stepPositions = (j: number) => Int32Array.from(prompts.map((p) => p.length + j));

    // The growing cache of the exported graph: the past joined by Concat, keys valid per column.
    const exported = await GraphSession.create(buildDecodeGraph(config, "float32"));
    const KV = config.num_key_value_heads;
    const empty = () => tensor("float32", new Float32Array(0), [B, KV, 0, D]);
    let keyValid = padded.valid;
    const none = {
      length: 0,
      keys: Array.from({ length: L }, empty),
      values: Array.from({ length: L }, empty),
    };
    let step = await growingCacheRun(exported, weights, padded.ids, padded.positions, keyValid, none, B);
    for (let j = 0; j < 4; j++) {
      expectScored(step.logits, j);
      const S = step.past.length + 1;
      const next = new Uint8Array(B * S);
      for (let b = 0; b < B; b++) {
        next.set(keyValid.subarray(b * (S - 1), (b + 1) * (S - 1)), b * S);
        next[b * S + S - 1] = 1;
      }
      keyValid = next;
      step = await growingCacheRun(exported, weights, stepIds(j), stepPositions(j), keyValid, step.past, B);
    }
    await exported.release();

    // The pre-allocated cache: the prefill, then single-token steps, weights as inputs and baked.
    for (const weightsVersion of [undefined, 0]) {
      // Capacity beyond what is used: the unwritten columns must stay masked.
      const cache = runner.decoder.fixedCache(B, padded.time + 6);
      const options = { weightsVersion };
      let logits = await runner.decoder.cachedDecodeStep(
        weights,
        padded.ids,
        padded.positions,
        padded.valid,
        cache,
        options,
      );
      for (let j = 0; j < 4; j++) {
        expectScored(logits, j);
        logits = await runner.decoder.cachedDecodeStep(
          weights,
          stepIds(j),
          stepPositions(j),
          new Uint8Array(B).fill(1),
          cache,
          options,
        );
        expect(cache.length).toBe(padded.time + j + 1);
      }
    }
    expect(runner.decoder.bakedSessionsBuilt).toBe(1);
    await runner.release();
  });
});

describe("the single-token step graph", () => {
  /** Node count by op type of the step graph built for `config` in `dtype`. */
  const opCounts = (config: QwenConfig, dtype: FloatDType) => {
    const counts = new Map<string, number>();
    for (const n of buildCachedDecodeGraph(config, dtype, { singleToken: true }).nodes)
      counts.set(n.opType, (counts.get(n.opType) ?? 0) + 1);
    return counts;
  };

  it("float32: each residual Add and the norm after it are one kernel; a power-of-two scale rides on RoPE", () => {
    const config = tinyQwenConfig({ num_key_value_heads: 2 }); // d_head 64: scale 1/8
    const L = config.num_hidden_layers;
    const counts = opCounts(config, "float32");
    // After attention and after the MLP of every layer (the last one's into the final norm).
    expect(counts.get("SkipSimplifiedLayerNormalization")).toBe(2 * L);
    expect(counts.get("SimplifiedLayerNormalization")).toBe(1); // the first layer's input norm
    // d_head 48 (scale 1/√48): the queries are scaled by a Mul in every layer instead of two Muls
    // (cos·s, sin·s) once, and nothing else differs.
    const odd = opCounts(tinyQwenConfig({ num_key_value_heads: 2, head_dim: 48 }), "float32");
    expect(odd.get("Mul")! - counts.get("Mul")!).toBe(L - 2);
  });

  it("float64 keeps the plain spelling (no com.microsoft norms)", () => {
    const plain = opCounts(tinyQwenConfig({ num_key_value_heads: 2 }), "float64");
    expect(plain.has("SkipSimplifiedLayerNormalization")).toBe(false);
    expect(plain.has("SimplifiedLayerNormalization")).toBe(false);
  });
});
