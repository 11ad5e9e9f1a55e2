/**
 * A heterogeneous team in one worker: two models of different shapes, each with its own tokenizer
 * (the built-in byte tokenizer; a word-level HF tokenizer.json with a 9-id vocabulary). Prompts are
 * tokenized with the policy's own tokenizer, completions decoded with it, sampling never leaves
 * its vocabulary, and a checkpoint carries its own tokenizer files.
 */
import { userObservation } from "@troupe/core";
import {
  ByteTokenizer,
  decodeCheckpoint,
  defaultOptimizerConfig,
  defaultPolicyLossConfig,
  HfTokenizer,
  tinyQwenConfig,
} from "@troupe/engine";
import { jsonFile, SMALL_QWEN_SHAPE, wordLevelTokenizerJson } from "@troupe/engine/testing";
import { describe, expect, it } from "vitest";
import { torchAvailable } from "./torch-available.ts";
import { suiteWorkerEngine } from "./worker-engine.ts";

/** Whole words: 0 [UNK], 1 hello, 2 world, 3 !, 4 user, 5 assistant, then ChatML specials 6–8. */
const wordFiles = {
  "tokenizer.json": wordLevelTokenizerJson({ type: "WordPiece", prefix: "##", cleanup: true }),
  "tokenizer_config.json": jsonFile({
    eos_token: "<|im_end|>",
    pad_token: "<|endoftext|>",
    chat_template:
      "{% for m in messages %}{{ m.role }} {{ m.content }} <|im_end|> {% endfor %}{% if add_generation_prompt %}assistant{% endif %}",
  }),
};

const byteModel = tinyQwenConfig({ vocab_size: 260, ...SMALL_QWEN_SHAPE, num_hidden_layers: 1 });
// 16 embedding rows for a 9-id tokenizer: ids 9–15 must never be sampled.
const wordModel = tinyQwenConfig({
  model_type: "qwen2",
  vocab_size: 16,
  hidden_size: 24,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  bos_token_id: 6,
  eos_token_id: 8,
  pad_token_id: 6,
  initializer_range: 0.5,
});

describe.skipIf(!torchAvailable)("heterogeneous models, each with its own tokenizer", () => {
  const worker = suiteWorkerEngine({
    models: {
      bytes: { kind: "init", config: byteModel, seed: 1 },
      words: { kind: "init", config: wordModel, seed: 2, tokenizerFiles: wordFiles },
    },
    policies: [
      { id: "planner", model: "bytes" },
      { id: "worker", model: "words" },
    ],
  });

  it("tokenizes each policy's prompt with its own tokenizer", () => {
    expect(worker.engine.tokenizerOf("planner")).toBeInstanceOf(ByteTokenizer);
    expect(worker.engine.tokenizerOf("worker")).toBeInstanceOf(HfTokenizer);
    const obs = userObservation("hello world !");
    expect(worker.engine.encode("worker", obs, "hello").promptTokenIds).toEqual([4, 1, 2, 3, 8, 5]);
    expect(worker.engine.encode("worker", obs, "hello").completionTokenIds).toEqual([1, 8]);
    const bytes = worker.engine.encode("planner", obs);
    expect(bytes.promptTokenIds[0]).toBe(257); // <|im_start|>
    expect(bytes.promptTokenIds.length).toBeGreaterThan(13);
    expect(worker.engine.policies().map((p) => [p.id, p.vocabSize])).toEqual([
      ["planner", 260],
      ["worker", 16],
    ]);
  });

  it("generates for both in one call, never sampling past a tokenizer's vocabulary", async () => {
    const sampling = { temperature: 1.5, topP: 1, topK: 0, maxTokens: 24, stop: [], stopTokenIds: [] };
    const requests = Array.from({ length: 6 }, (_, i) => ({
      policyId: i % 2 === 0 ? "worker" : "planner",
      observation: userObservation("hello world"),
      seed: 100 + i,
    }));
    const out = await worker.engine.generate(requests, sampling);
    const words = worker.engine.tokenizerOf("worker");
    let wordTokens = 0;
    out.forEach((c, i) => {
      if (requests[i]!.policyId === "worker") {
        for (const id of c.tokenIds) expect(id).toBeLessThan(9);
        wordTokens += c.tokenIds.length;
        const ids = c.finishReason === "stop" ? c.tokenIds.slice(0, -1) : c.tokenIds;
        expect(c.text).toBe(words.decode(ids));
      } else {
        for (const id of c.tokenIds) expect(id).toBeLessThan(259);
      }
    });
    expect(wordTokens).toBeGreaterThan(10);
    // sampling and scoring both use log q over the 9 usable ids: equal at T = 1
    const [c] = await worker.engine.generate([{ ...requests[0]!, seed: 7 }], { ...sampling, temperature: 1 });
    const [lp] = await worker.engine.logprobs("worker", [
      { promptTokenIds: c!.promptTokenIds, completionTokenIds: c!.tokenIds },
    ]);
    expect(c!.tokenIds.length).toBeGreaterThan(0);
    c!.logprobs.forEach((q, t) => {
      expect(q).toBeCloseTo(lp![t]!, 4);
    });
  });

  it("trains and checkpoints each model with its own tokenizer files", async () => {
    const seq = worker.engine.encode("worker", userObservation("hello"), "world !");
    const [before] = await worker.engine.logprobs("worker", [seq]);
    await worker.engine.trainStep("worker", [{ ...seq, oldLogprobs: before!, advantage: 1 }], {
      loss: defaultPolicyLossConfig,
      optimizer: { ...defaultOptimizerConfig, lr: 1e-2 },
      microBatchSize: 1,
    });
    const files = await worker.engine.save("worker");
    expect(files["tokenizer.json"]).toEqual(wordFiles["tokenizer.json"]);
    const ckpt = decodeCheckpoint(files);
    expect(ckpt.config.vocab_size).toBe(16);
    expect(ckpt.config.model_type).toBe("qwen2");
    expect(ckpt.tokenizer.encode("hello world")).toEqual([1, 2]);
    const planner = decodeCheckpoint(await worker.engine.save("planner"));
    expect(planner.tokenizer).toBeInstanceOf(ByteTokenizer);
    expect(planner.trainerState?.optimizer_step ?? 0).toBe(0);
  });
});
