/**
 * The decode runner over the pre-allocated KV caches of generation: capacity errors, the baked-weights
 * decode session (rebuilt exactly when the weights version changes), and engine sampling that
 * follows the weights across a training step.
 */
import { samplingParams, userObservation } from "@troupe/core";
import {
  ByteTokenizer,
  defaultOptimizerConfig,
  defaultPolicyLossConfig,
  tinyQwenConfig,
} from "@troupe/engine";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { describe, expect, it } from "vitest";
import { createOnnxEngine } from "../../src/engine.ts";
import { generateBatch } from "../../src/runtime/generate.ts";
import { ModelRunner } from "../../src/runtime/runner.ts";
import { randomTokens, TINY_CONFIGS, tinyWeights } from "../fixtures.ts";
import { uniformStream } from "../gradcheck.ts";

describe("pre-allocated KV cache", () => {
  it("a step past the capacity or with mis-sized inputs throws", async () => {
    const config = TINY_CONFIGS["qwen2 tied, one KV head"]!;
    const runner = new ModelRunner(config);
    const weights = tinyWeights(config, 2);
    const cache = runner.decoder.fixedCache(1, 3);
    await expect(
      runner.decoder.cachedDecodeStep(
        weights,
        BigInt64Array.of(1n, 2n, 3n, 4n),
        Int32Array.of(0, 1, 2, 3),
        new Uint8Array(4).fill(1),
        cache,
      ),
    ).rejects.toThrow("0 cached + 4 new columns exceed capacity 3");
    await expect(
      runner.decoder.cachedDecodeStep(
        weights,
        BigInt64Array.of(1n, 2n),
        Int32Array.of(0),
        new Uint8Array(2).fill(1),
        cache,
      ),
    ).rejects.toThrow("ids, positions and valid must all be [1, T]");
    await runner.release();
  });

  it("a prefill with nothing cached gives the logits and keys/values of a prefill into a cache", async () => {
    const config = TINY_CONFIGS["qwen3 tied, q/k-norm, GQA"]!;
    const { num_key_value_heads: KV, head_dim: D, num_hidden_layers: L } = config;
    const rand = uniformStream(5);
    const weights = tinyWeights(config, 6);
    const runner = new ModelRunner(config);
    // Two left-padded rows of T = 8: a prompt of 5 (3 pads first) and one of 8.
    const B = 2;
    const T = 8;
    const prompts = [randomTokens(5, config.vocab_size, rand), randomTokens(8, config.vocab_size, rand)];
    const ids = new BigInt64Array(B * T);
    const positions = new Int32Array(B * T);
    const valid = new Uint8Array(B * T);
    prompts.forEach((p, b) => {
      const pad = T - p.length;
      p.forEach((token, j) => {
        ids[b * T + pad + j] = BigInt(token);
        positions[b * T + pad + j] = j;
        valid[b * T + pad + j] = 1;
      });
    });
    const cache = runner.decoder.fixedCache(B, T);
    const cachedLogits = Float32Array.from(
      await runner.decoder.cachedDecodeStep(weights, ids, positions, valid, cache),
    );
    const alone = await runner.decoder.prefill(weights, ids, positions, valid, B);
    const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
      let m = 0;
      for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
      return m;
    };
    expect(alone.logits).toHaveLength(B * config.vocab_size);
    expect(maxDiff(alone.logits, cachedLogits)).toBeLessThan(1e-5);
    // The returned [B, KV, T, D] keys/values are the cache's columns (capacity T: the same layout).
    for (let i = 0; i < L; i++) {
      expect(alone.keys[i]).toHaveLength(B * KV * T * D);
      for (let b = 0; b < B; b++) {
        for (let t = 0; t < T; t++) {
          if (valid[b * T + t] === 0) continue; // a pad's keys are never attended to
          for (let h = 0; h < KV; h++) {
            const at = ((b * KV + h) * T + t) * D;
            expect(
              maxDiff(alone.keys[i]!.subarray(at, at + D), cache.keys[i]!.subarray(at, at + D)),
            ).toBeLessThan(1e-5);
            expect(
              maxDiff(alone.values[i]!.subarray(at, at + D), cache.values[i]!.subarray(at, at + D)),
            ).toBeLessThan(1e-5);
          }
        }
      }
    }
    await expect(runner.decoder.prefill(weights, ids, positions.subarray(1), valid, B)).rejects.toThrow(
      "prefill: ids, positions and valid must all be [2, T]",
    );
    await runner.release();
  });

  it("the baked-weights step session is rebuilt exactly when the weights version changes", async () => {
    const config = TINY_CONFIGS["qwen3 tied, q/k-norm, GQA"]!;
    const V = config.vocab_size;
    const rand = uniformStream(3);
    const weights = tinyWeights(config, 4);
    const runner = new ModelRunner(config);
    const prompt = randomTokens(5, V, rand);
    /** Logits of the first decode step after the prompt, with or without a weights version. */
    const firstStep = async (weightsVersion?: number) => {
      const cache = runner.decoder.fixedCache(1, 6);
      await runner.decoder.cachedDecodeStep(
        weights,
        BigInt64Array.from(prompt, BigInt),
        Int32Array.from(prompt, (_, i) => i),
        new Uint8Array(5).fill(1),
        cache,
      );
      const logits = await runner.decoder.cachedDecodeStep(
        weights,
        BigInt64Array.of(7n),
        Int32Array.of(5),
        Uint8Array.of(1),
        cache,
        { weightsVersion },
      );
      return Float32Array.from(logits);
    };
    const maxDiff = (a: Float32Array, b: Float32Array) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));
    const baked0 = await firstStep(0);
    expect(maxDiff(baked0, await firstStep())).toBeLessThan(1e-5);
    expect(runner.decoder.bakedSessionsBuilt).toBe(1);
    await firstStep(0);
    expect(runner.decoder.bakedSessionsBuilt).toBe(1);
    // An in-place update (as AdamW does) under a new version: the baked session follows it.
    const embed = weights.get("model.embed_tokens.weight")!.data;
    for (let i = 0; i < embed.length; i++) embed[i] = embed[i]! * 1.5;
    const baked1 = await firstStep(1);
    expect(runner.decoder.bakedSessionsBuilt).toBe(2);
    expect(maxDiff(baked1, await firstStep())).toBeLessThan(1e-5);
    expect(maxDiff(baked1, baked0)).toBeGreaterThan(1e-2);
    await runner.release();
  });

  it("engine sampling follows the weights across a training step (baked session vs weights as inputs)", async () => {
    const config = tinyQwenConfig(SMALL_QWEN_SHAPE);
    const e = await createOnnxEngine({ policies: [{ id: "p", config, seed: 1 }] });
    const obs = userObservation("hi there");
    const sampling = samplingParams({ maxTokens: 10 });
    const tokenizer = new ByteTokenizer();
    /** The engine's completion (baked step session) and the same request with the weights as inputs. */
    const both = async () => {
      const [viaEngine] = await e.generate([{ policyId: "p", observation: obs, seed: 5 }], sampling);
      const [viaInputs] = await generateBatch(
        e.runnerOf("p"),
        e.weightsOf("p"),
        tokenizer,
        [viaEngine!.promptTokenIds],
        [5],
        sampling,
      );
      expect(viaEngine!.tokenIds).toEqual(viaInputs!.tokenIds);
      viaEngine!.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(viaInputs!.logprobs[i]!, 4));
      return viaEngine!;
    };
    const before = await both();
    const seq = e.encode("p", obs, "hello");
    const [old] = await e.logprobs("p", [seq]);
    await e.trainStep("p", [{ ...seq, oldLogprobs: old!, advantage: 1 }], {
      loss: defaultPolicyLossConfig,
      optimizer: { ...defaultOptimizerConfig, lr: 5e-2, weightDecay: 0 },
      microBatchSize: 1,
    });
    const after = await both();
    expect(after.logprobs).not.toEqual(before.logprobs);
    await e.close();
  });
});
