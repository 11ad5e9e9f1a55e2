import { describe, expect, it } from "vitest";
import { MemoryPlan } from "../../src/runtime/memory-plan.ts";
import { TINY_CONFIGS } from "../fixtures.ts";

const config = TINY_CONFIGS["qwen3 tied, q/k-norm, GQA"]!;

describe("MemoryPlan", () => {
  const plan = new MemoryPlan(config, "float32", config.vocab_size);

  it("a run over sequences is sized by its longest, less the last token (a target only)", () => {
    expect(plan.runBytes("train", 3, 10)).toBe(plan.estimate("train", { B: 3, T: 9 }));
    const sequences = [
      { promptTokenIds: [1, 2, 3], completionTokenIds: [4] },
      { promptTokenIds: [1], completionTokenIds: [2, 3, 4, 5, 6] },
    ];
    expect(plan.sequencesBytes("score", sequences)).toBe(plan.runBytes("score", 2, 6));
    expect(plan.runBytes("train", 1, 20)).toBeGreaterThan(plan.runBytes("score", 1, 20));
    expect(plan.runBytes("train", 2, 20)).toBeGreaterThan(plan.runBytes("train", 1, 20));
  });

  it("generation holds the prefill's run, then the cache and logits of prompt + new columns", () => {
    const { num_hidden_layers: L, num_key_value_heads: KV, head_dim: D, vocab_size: V } = config;
    const [rows, prompt, maxTokens] = [4, 7, 5];
    const C = prompt + maxTokens;
    const cache = rows * (2 * L * KV * C * D + V) * 4 + rows * C;
    expect(plan.generateBytes(rows, prompt, maxTokens)).toBe(
      plan.estimate("prefill", { B: rows, T: prompt, C }) + cache,
    );
    expect(plan.sequenceBytes(12, 5)).toEqual({
      train: plan.runBytes("train", 1, 12),
      score: plan.runBytes("score", 1, 12),
      generate: plan.generateBytes(1, 7, 5),
    });
  });
});
