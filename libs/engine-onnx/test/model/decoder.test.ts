import { qwenReferenceLogits, qwenReferenceLogprobs } from "@troupe/engine/reference";
import { describe, expect, it } from "vitest";
import { graphWeightSpecs } from "../../src/model/fused-weights.ts";
import { buildScoringGraph } from "../../src/model/graphs.ts";
import { attentionBias, ropeTables } from "../../src/model/host-inputs.ts";
import { padBatch } from "../../src/runtime/padding.ts";
import { ModelRunner } from "../../src/runtime/runner.ts";
import { GraphSession, tensor } from "../../src/runtime/session.ts";
import { weightFeeds } from "../../src/runtime/weight-feeds.ts";
import { randomTokens, scoredCompletions, TINY_CONFIGS, tinyWeights } from "../fixtures.ts";
import { uniformStream } from "../gradcheck.ts";

describe.each(Object.entries(TINY_CONFIGS))("%s", (_, config) => {
  const weights = tinyWeights(config, 11);
  const rand = uniformStream(5);
  const V = config.vocab_size;

  it("logits equal the plain-TS float64 reference within 1e-4 (right-padded batch)", async () => {
    const sequences = [randomTokens(9, V, rand), randomTokens(5, V, rand), randomTokens(7, V, rand)];
    const session = await GraphSession.create(buildScoringGraph(config, "float32", { withLogits: true }));
    const padded = padBatch(sequences, "right");
    const { batch, time } = padded;
    const D = config.head_dim;
    const rope = ropeTables(padded.positions, D, config.rope_theta, "float32");
    const out = await session.run({
      ...weightFeeds(weights, graphWeightSpecs(config, false), "float32", "test"),
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

  it("scored log-probs of completions equal the reference", async () => {
    const runner = new ModelRunner(config);
    const { prompts, completions, scored } = await scoredCompletions(runner, weights, rand);
    prompts.forEach((p, b) => {
      const ref = qwenReferenceLogprobs(config, weights, p, completions[b]!);
      scored.logprobs[b]!.forEach((lp, j) => expect(Math.abs(lp - ref[j]!)).toBeLessThan(1e-4));
    });
    await runner.release();
  });
});
