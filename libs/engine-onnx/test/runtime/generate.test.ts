/**
 * Batched generation: a batch prefilled in groups of PREFILL_ROWS, whose rows leave as they finish,
 * gives each row the completion it gets alone; and one sequence's sampler over known logits (greedy,
 * stop ids and strings, the length limit, ids past the tokenizer's never drawn, one draw per token).
 */
import { samplingParams } from "@troupe/core";
import { ByteTokenizer, tinyQwenConfig } from "@troupe/engine";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { describe, expect, it } from "vitest";
import { generateBatch, PREFILL_ROWS, SequenceSampler } from "../../src/runtime/generate.ts";
import { ModelRunner } from "../../src/runtime/runner.ts";
import { randomTokens, tinyWeights } from "../fixtures.ts";
import { uniformStream } from "../gradcheck.ts";

describe("generateBatch", () => {
  it("a batch prefilled in groups, whose rows leave as they finish, gives each row its completion alone", async () => {
    const config = tinyQwenConfig(SMALL_QWEN_SHAPE);
    const runner = new ModelRunner(config);
    const weights = tinyWeights(config, 9);
    const tokenizer = new ByteTokenizer();
    const rand = uniformStream(11);
    // More rows than one prefill group takes, prompts of different lengths (left padding), and a
    // sixth of the byte ids as stop ids, so rows end at very different steps.
    const B = 2 * PREFILL_ROWS + 5;
    const prompts = Array.from({ length: B }, () => randomTokens(3 + Math.floor(rand() * 10), 256, rand));
    const seeds = prompts.map((_, b) => 100 + b);
    const sampling = samplingParams({
      maxTokens: 12,
      stopTokenIds: Array.from({ length: 43 }, (_, i) => 6 * i),
    });
    const batched = await generateBatch(runner, weights, tokenizer, prompts, seeds, sampling);
    const lengths = new Set(batched.map((c) => c.tokenIds.length));
    expect(lengths.size).toBeGreaterThan(4);
    expect(lengths.has(12)).toBe(true);
    for (let b = 0; b < B; b++) {
      const [alone] = await generateBatch(runner, weights, tokenizer, [prompts[b]!], [seeds[b]!], sampling);
      expect(batched[b]!.tokenIds, `row ${b}`).toEqual(alone!.tokenIds);
      batched[b]!.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(alone!.logprobs[i]!, 5));
    }
    await runner.release();
  });

  it("an empty batch asks nothing of the runner", async () => {
    const runner = new ModelRunner(tinyQwenConfig(SMALL_QWEN_SHAPE));
    expect(await generateBatch(runner, new Map(), new ByteTokenizer(), [], [], samplingParams())).toEqual([]);
    await runner.release();
  });
});

describe("SequenceSampler", () => {
  const tokenizer = new ByteTokenizer(); // 259 ids: 256 bytes, 256 <|endoftext|>, 257 <|im_start|>, 258 <|im_end|>
  const V = 300; // a model vocabulary padded past the tokenizer's
  /** Logits [2·V]: row 0 peaks at `peak0`, row 1 at `peak1`; ids ≥ 259 are higher still. */
  const logits = (peak0: number, peak1: number) => {
    const out = new Float32Array(2 * V).fill(-5);
    for (let i = 259; i < V; i++) out[i] = out[V + i] = 50;
    out[peak0] = 10;
    out[V + peak1] = 10;
    return out;
  };

  it("greedy: the argmax of its own row among the tokenizer's ids, log-prob 0", () => {
    const sampler = new SequenceSampler(
      [1, 2, 3],
      7,
      samplingParams({ temperature: 0, maxTokens: 3 }),
      tokenizer,
      V,
      259,
    );
    sampler.sample(logits(0, 104), 1);
    sampler.sample(logits(0, 105), 1);
    expect([sampler.tokens, sampler.logprobs, sampler.done, sampler.lastToken, sampler.nextPosition]).toEqual(
      [[104, 105], [0, 0], false, 105, 4],
    );
    sampler.sample(logits(0, 33), 1);
    expect(sampler.completion()).toEqual({
      text: "hi!",
      promptTokenIds: [1, 2, 3],
      tokenIds: [104, 105, 33],
      logprobs: [0, 0, 0],
      finishReason: "length",
    });
  });

  it("a stop id ends the sequence: in its tokens, not in its text", () => {
    const sampler = new SequenceSampler([], 1, samplingParams({ temperature: 0 }), tokenizer, V, 259);
    sampler.sample(logits(111, 0), 0);
    sampler.sample(logits(258, 0), 0); // <|im_end|>, the tokenizer's stop id
    expect(sampler.done).toBe(true);
    expect(sampler.completion()).toMatchObject({ text: "o", tokenIds: [111, 258], finishReason: "stop" });
  });

  it("a stop string ends the sequence and cuts the text before it", () => {
    const sampler = new SequenceSampler(
      [],
      1,
      samplingParams({ temperature: 0, stop: ["\n\n"] }),
      tokenizer,
      V,
      259,
    );
    for (const id of [97, 10, 10, 98]) if (!sampler.done) sampler.sample(logits(id, 0), 0);
    expect(sampler.completion()).toMatchObject({ text: "a", tokenIds: [97, 10, 10], finishReason: "stop" });
  });

  it("samples with its seed only: one draw per token, never an id past the tokenizer's", () => {
    const sampling = samplingParams({ temperature: 1, maxTokens: 20 });
    const run = (seed: number) => {
      const sampler = new SequenceSampler([], seed, sampling, tokenizer, V, 259);
      const flat = new Float32Array(V).fill(0);
      for (let i = 259; i < V; i++) flat[i] = 100;
      while (!sampler.done) sampler.sample(flat, 0);
      return sampler.tokens;
    };
    const a = run(3);
    expect(run(3)).toEqual(a);
    expect(run(4)).not.toEqual(a);
    expect(a.every((id) => id < 259)).toBe(true);
  });
});
