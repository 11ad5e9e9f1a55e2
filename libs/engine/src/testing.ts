/**
 * Fixtures for the engine tests, here and in the engine packages: the shapes of the test models,
 * a policy loss with every term on, and tiny HF tokenizer files. Outside the public index so that
 * no runtime code builds on them; import them as `@troupe/engine/testing`.
 */
import type { PolicyLossConfig } from "./loss.ts";
import { hfSpecialToken } from "./tokenizer.ts";

/** The smallest test models (graph and reference checks): hidden 16, 2 layers of 4 heads (2 KV) of 4, MLP 24. */
export const MICRO_QWEN_SHAPE = {
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 4,
} as const;

/** The small test models whole engines run: hidden 32, 2 layers of 4 heads (2 KV) of 8, MLP 64. */
export const SMALL_QWEN_SHAPE = {
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
} as const;

/** Every term of the policy loss on (dual clip, KL, entropy, the supervised term), per-sequence means. */
export const FULL_POLICY_LOSS: PolicyLossConfig = {
  clipLow: 0.2,
  clipHigh: 0.28,
  dualClip: 3,
  klCoef: 0.1,
  entropyCoef: 0.01,
  nllCoef: 0.3,
  aggregation: "sequence-mean",
};

/** A JSON file's bytes. */
export const jsonFile = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

/**
 * A word-level tokenizer.json with a whitespace pre-tokenizer: 0 [UNK], 1 hello, 2 world, 3 !,
 * 4 user, 5 assistant, then the ChatML specials 6 <|endoftext|>, 7 <|im_start|>, 8 <|im_end|>.
 */
export function wordLevelTokenizerJson(decoder: unknown = null): Uint8Array {
  return jsonFile({
    version: "1.0",
    added_tokens: [
      hfSpecialToken("<|endoftext|>", 6),
      hfSpecialToken("<|im_start|>", 7),
      hfSpecialToken("<|im_end|>", 8),
    ],
    normalizer: null,
    pre_tokenizer: { type: "Whitespace" },
    post_processor: null,
    decoder,
    model: {
      type: "WordLevel",
      vocab: { "[UNK]": 0, hello: 1, world: 2, "!": 3, user: 4, assistant: 5 },
      unk_token: "[UNK]",
    },
  });
}
