import { describe, expect, it } from "vitest";
import { MemoryPlan } from "../../src/runtime/memory-plan.ts";
import { checkTokens, SequenceRunner } from "../../src/runtime/sequence-runner.ts";
import { TINY_CONFIGS, tinyWeights } from "../fixtures.ts";

const config = TINY_CONFIGS["qwen2 tied, one KV head"]!;

describe("SequenceRunner", () => {
  it("rejects an empty prompt and a token outside the vocabulary, naming where", () => {
    expect(() => checkTokens([{ promptTokenIds: [], completionTokenIds: [1] }], 32, 32, "p")).toThrow(
      "p: sequence 0: the prompt is empty",
    );
    const sequences = [
      { promptTokenIds: [1, 2], completionTokenIds: [3] },
      { promptTokenIds: [1], completionTokenIds: [2, 20] },
    ];
    expect(() => checkTokens(sequences, 20, 32, "p")).toThrow(
      "p: sequence 1: token id 20 at completion position 1 is outside the tokenizer's vocabulary (20 ids; vocab_size 32)",
    );
    expect(() => checkTokens([{ promptTokenIds: [40], completionTokenIds: [] }], 32, 32, "p")).toThrow(
      "p: sequence 0: token id 40 at prompt position 0 is outside the vocabulary (vocab_size 32)",
    );
  });

  it("scores each completion token, the same alone as in a padded batch", async () => {
    const plan = new MemoryPlan(config, "float32", config.vocab_size);
    const runner = new SequenceRunner(plan, "p", {
      completionWindow: false,
      arenaLimit: Number.POSITIVE_INFINITY,
    });
    const weights = tinyWeights(config, 3);
    expect(await runner.score(weights, [])).toEqual({ logprobs: [], entropies: [] });
    const a = { promptTokenIds: [1, 2, 3, 4, 5], completionTokenIds: [6, 7] };
    const b = { promptTokenIds: [9], completionTokenIds: [10, 11, 12] };
    const both = await runner.score(weights, [a, b]);
    const alone = await runner.score(weights, [b]);
    expect(both.logprobs.map((l) => l.length)).toEqual([2, 3]);
    both.logprobs[1]!.forEach((lp, j) => expect(lp).toBeCloseTo(alone.logprobs[0]![j]!, 5));
    both.entropies[1]!.forEach((e, j) => expect(e).toBeCloseTo(alone.entropies[0]![j]!, 5));
    await runner.release();
  });
});
