/** The engine test fixtures (testing.ts): the test model shapes and the word-level tokenizer are what the suites assume. */
import { expect, it } from "vitest";
import { defaultPolicyLossConfig } from "../src/loss.ts";
import { tinyQwenConfig, validateQwenConfig } from "../src/model-config.ts";
import {
  FULL_POLICY_LOSS,
  jsonFile,
  MICRO_QWEN_SHAPE,
  SMALL_QWEN_SHAPE,
  wordLevelTokenizerJson,
} from "../src/testing.ts";
import { HfTokenizer } from "../src/tokenizer.ts";

it("the test model shapes are valid Qwen configs (heads × head_dim, grouped KV heads)", () => {
  for (const shape of [MICRO_QWEN_SHAPE, SMALL_QWEN_SHAPE]) {
    const config = validateQwenConfig(tinyQwenConfig(shape));
    expect(config.num_attention_heads % config.num_key_value_heads).toBe(0);
    expect(config.hidden_size).toBe(config.num_attention_heads * config.head_dim!);
  }
});

it("the full policy loss switches on every term the default leaves off", () => {
  for (const key of ["dualClip", "klCoef", "entropyCoef", "nllCoef"] as const) {
    expect(defaultPolicyLossConfig[key] ?? 0).toBe(0);
    expect(FULL_POLICY_LOSS[key]).toBeGreaterThan(0);
  }
  expect(FULL_POLICY_LOSS.clipHigh).toBeGreaterThan(FULL_POLICY_LOSS.clipLow);
});

it("jsonFile is the UTF-8 bytes of the JSON text", () => {
  expect(new TextDecoder().decode(jsonFile({ a: [1, "é"] }))).toBe('{"a":[1,"é"]}');
});

it("the word-level tokenizer has the vocabulary its comment lists", () => {
  const tokenizer = new HfTokenizer({ "tokenizer.json": wordLevelTokenizerJson() });
  expect(tokenizer.encode("hello world !")).toEqual([1, 2, 3]);
  expect(tokenizer.encode("user assistant")).toEqual([4, 5]);
  expect(() => tokenizer.encode("goodbye")).toThrow(/"goodbye" has no id/);
  expect(tokenizer.encode("<|endoftext|><|im_start|><|im_end|>")).toEqual([6, 7, 8]);
  expect(tokenizer.vocabSize).toBe(9);
});
