import { logSoftmax } from "@troupe/engine";
import { qwenReferenceLogits, qwenReferenceLogprobs } from "@troupe/engine/reference";
import { describe, expect, it } from "vitest";
import { buildScoringGraph } from "../src/model/graphs.ts";
import { attentionBias, ropeTables } from "../src/model/host-inputs.ts";
import { padBatch } from "../src/runtime/padding.ts";
import { ModelRunner } from "../src/runtime/runner.ts";
import { GraphSession, tensor } from "../src/runtime/session.ts";
import { randomTokens, TINY_CONFIGS, tinyWeights } from "./fixtures.ts";
import { uniformStream } from "./gradcheck.ts";

describe.each(Object.entries(TINY_CONFIGS))("%s", (_, config) => {
  const weights = tinyWeights(config, 11);
  const rand = uniformStream(5);
  const V = config.vocab_size;

  it("logits equal the plain-TS float64 reference within 1e-4 (right-padded batch)", async () => {
    const sequences = [randomTokens(9, V, rand), randomTokens(5, V, rand), randomTokens(7, V, rand)];
    const session = await GraphSession.create(buildScoringGraph(config, "float32", { withLogits: true }));
    const runner = new ModelRunner(config);
    const padded = padBatch(sequences, "right");
    const { batch, time } = padded;
    const D = config.head_dim;
    const rope = ropeTables(padded.positions, D, config.rope_theta, "float32");
    const out = await session.run({
      ...runner.weightFeeds(weights),
      input_ids: tensor("int64", padded.ids, [batch, time]),
      targets: tensor("int64", new BigInt64Array(batch * time), [batch, time]),
      rope_cos: tensor("float32", rope.cos, [batch, time, 1, D]),
      rope_sin: tensor("float32", rope.sin, [batch, time, 1, D]),
      attn_bias: tensor("float32", attentionBias(padded.valid, batch, 0, time, "float32"), [
        batch,
        1,
        1,
        time,
        time,
      ]),
    });
    const logits = out.logits!.data as Float32Array;
    expect(logits.length).toBe(batch * time * V);
    let maxError = 0;
    sequences.forEach((seq, b) => {
      const reference = qwenReferenceLogits(config, weights, seq);
      for (let t = 0; t < seq.length; t++) {
        for (let v = 0; v < V; v++) {
          maxError = Math.max(maxError, Math.abs(logits[(b * time + t) * V + v]! - reference[t * V + v]!));
        }
      }
    });
    expect(maxError).toBeLessThan(1e-4);
    await session.release();
  });

  it("scored log-probs equal the reference; decoding with the KV cache equals full recomputation", async () => {
    const runner = new ModelRunner(config);
    const prompts = [randomTokens(6, V, rand), randomTokens(3, V, rand)];
    const completions = [randomTokens(4, V, rand), randomTokens(4, V, rand)];
    const scored = await runner.score(
      weights,
      prompts.map((p, b) => ({ promptTokenIds: p, completionTokenIds: completions[b]! })),
    );
    prompts.forEach((p, b) => {
      const ref = qwenReferenceLogprobs(config, weights, p, completions[b]!);
      scored.logprobs[b]!.forEach((lp, j) => expect(Math.abs(lp - ref[j]!)).toBeLessThan(1e-4));
    });
    // Left-padded prefill, then one token per step through the growing (Concat) cache of
    // `decodeStep`, and through the pre-allocated cache of `cachedDecodeStep` with the weights as
    // inputs and baked in as constants.
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

    let keyValid = padded.valid;
    let step = await runner.decodeStep(
      weights,
      padded.ids,
      padded.positions,
      keyValid,
      runner.emptyCache(B),
      B,
    );
    for (let j = 0; j < 4; j++) {
      expectScored(step.logits, j);
      const S = step.cache.length + 1;
      const next = new Uint8Array(B * S);
      for (let b = 0; b < B; b++) {
        next.set(keyValid.subarray(b * (S - 1), (b + 1) * (S - 1)), b * S);
        next[b * S + S - 1] = 1;
      }
      keyValid = next;
      step = await runner.decodeStep(weights, stepIds(j), stepPositions(j), keyValid, step.cache, B);
    }

    for (const weightsVersion of [undefined, 0]) {
      // Capacity beyond what is used: the unwritten columns must stay masked.
      const cache = runner.fixedCache(B, padded.time + 6);
      const options = { weightsVersion };
      let logits = await runner.cachedDecodeStep(
        weights,
        padded.ids,
        padded.positions,
        padded.valid,
        cache,
        options,
      );
      for (let j = 0; j < 4; j++) {
        expectScored(logits, j);
        logits = await runner.cachedDecodeStep(
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
    expect(runner.bakedSessionsBuilt).toBe(1);
    await runner.release();
  });
});
