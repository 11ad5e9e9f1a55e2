import { describe, expect, it } from "vitest";
import { ModelRunner } from "../../src/runtime/runner.ts";
import { TINY_CONFIGS } from "../fixtures.ts";

const config = TINY_CONFIGS["qwen3 tied, q/k-norm, GQA"]!;

describe("ModelRunner", () => {
  it("checks its options once, naming the one that is wrong", () => {
    expect(() => new ModelRunner(config, "float32", "p", { vocab: 0 })).toThrow(
      "p: vocab 0 must be an integer in [1, vocab_size 32]",
    );
    expect(() => new ModelRunner(config, "float32", "p", { vocab: 33 })).toThrow("p: vocab 33 must be");
    expect(() => new ModelRunner(config, "float32", "p", { arenaBudgetBytes: 0 })).toThrow(
      "p: arenaBudgetBytes must be > 0, got 0",
    );
  });

  it("its parts share the vocabulary and the memory plan; the arenas are named per part", () => {
    const runner = new ModelRunner(config, "float32", "p", { vocab: 20 });
    expect(runner.vocab).toBe(20);
    expect(runner.memory.vocab).toBe(20);
    expect(() => runner.checkTokens([{ promptTokenIds: [25], completionTokenIds: [] }])).toThrow(
      "p: sequence 0: token id 25 at prompt position 0 is outside the tokenizer's vocabulary (20 ids; vocab_size 32)",
    );
    const arenas = runner.arenaSessions;
    expect([arenas.scoring.label, arenas.train.label, arenas.prefill.label]).toEqual([
      "p scoring",
      "p training",
      "p prefill",
    ]);
  });
});
