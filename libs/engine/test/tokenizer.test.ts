import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonFile, wordLevelTokenizerJson } from "../src/testing.ts";
import {
  ByteTokenizer,
  bytesToUnicode,
  CHATML_TEMPLATE,
  encodeSequence,
  HfTokenizer,
  hfSpecialToken,
  loadTokenizer,
} from "../src/tokenizer.ts";

/** The word-level tokenizer of the fixtures with a tokenizer_config.json. */
const wordLevelFiles = (config: Record<string, unknown>) => ({
  "tokenizer.json": wordLevelTokenizerJson(),
  "tokenizer_config.json": jsonFile(config),
});

/** A tiny BPE tokenizer.json with two merges: a+b → ab, ab+ab → abab. */
const bpeFiles = {
  "tokenizer.json": jsonFile({
    version: "1.0",
    added_tokens: [hfSpecialToken("<|endoftext|>", 5)],
    normalizer: null,
    pre_tokenizer: { type: "Whitespace" },
    post_processor: null,
    decoder: null,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: "[UNK]",
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      vocab: { "[UNK]": 0, a: 1, b: 2, ab: 3, abab: 4 },
      merges: ["a b", "ab ab"],
    },
  }),
};

describe("ByteTokenizer", () => {
  const tok = new ByteTokenizer();

  it("encodes UTF-8 bytes and special-token strings", () => {
    expect(tok.encode("hé")).toEqual([104, 0xc3, 0xa9]);
    expect(tok.encode("a<|im_end|>b<|endoftext|>")).toEqual([97, 258, 98, 256]);
    expect(tok.encode("<|im_end")).toEqual(Array.from(new TextEncoder().encode("<|im_end"))); // not a special
    expect(tok.encode("")).toEqual([]);
  });

  it("decodes bytes and specials; a cut character becomes U+FFFD", () => {
    expect(tok.decode([104, 0xc3, 0xa9, 258])).toBe("hé<|im_end|>");
    expect(tok.decode([104, 258, 105], { skipSpecialTokens: true })).toBe("hi");
    expect(tok.decode([0xc3])).toBe("\uFFFD");
    expect(() => tok.decode([1, 300])).toThrow("id 300 at position 1 is outside [0, 259)");
  });

  it("renders ChatML and ends the prompt by opening the assistant turn", () => {
    const messages = [
      { role: "system" as const, content: "Be brief." },
      { role: "user" as const, content: "2+2?" },
    ];
    expect(tok.renderChat(messages)).toBe(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n",
    );
    expect(tok.renderChat(messages, false)).toBe(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n",
    );
    const ids = tok.encodeChat([{ role: "user", content: "hi" }]);
    expect(ids).toEqual([257, ...tok.encode("user\nhi"), 258, 10, 257, ...tok.encode("assistant\n")]);
    expect(tok.eosTokenId).toBe(258);
    expect(tok.padTokenId).toBe(256);
    expect(tok.stopTokenIds).toEqual([258, 256]);
  });

  it("round-trips any text without special-token strings (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => {
        fc.pre(!text.includes("<|"));
        expect(tok.decode(tok.encode(text))).toBe(text);
      }),
    );
  });

  it("maps bytes to GPT-2's printable characters", () => {
    const chars = bytesToUnicode();
    expect(chars[33]).toBe("!");
    expect(chars[32]).toBe("Ġ"); // space → U+0120, as in every byte-level BPE vocab
    expect(chars[10]).toBe("Ċ"); // newline → U+010A
    expect(new Set(chars).size).toBe(256);
  });
});

describe("HfTokenizer", () => {
  it("reads ByteTokenizer's own tokenizer.json and agrees with it everywhere (property)", () => {
    const byte = new ByteTokenizer();
    const hf = new HfTokenizer(byte.toFiles());
    expect(hf.vocabSize).toBe(259);
    expect(hf.eosTokenId).toBe(258);
    expect(hf.padTokenId).toBe(256);
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 30 }),
        fc.constantFrom("", "<|im_end|>", "<|im_start|>"),
        (text, special) => {
          const s = `${text}${special}${text}`;
          const ids = byte.encode(s);
          expect(hf.encode(s)).toEqual(ids);
          expect(hf.decode(ids)).toBe(byte.decode(ids));
        },
      ),
      { numRuns: 60 },
    );
    const messages = [{ role: "user" as const, content: "héllo\nworld" }];
    expect(hf.renderChat(messages)).toBe(byte.renderChat(messages)); // the Jinja template = the built-in renderer
    expect(hf.encodeChat(messages)).toEqual(byte.encodeChat(messages));
  });

  it("runs a word-level tokenizer.json with its own chat template", () => {
    const tok = new HfTokenizer(
      wordLevelFiles({
        eos_token: "<|im_end|>",
        pad_token: { content: "<|endoftext|>", special: true },
        chat_template:
          "{% for m in messages %}{{ m.role }} {{ m.content }} {{ eos_token }}{% endfor %}{% if add_generation_prompt %}assistant{% endif %}",
      }),
    );
    expect(tok.encode("hello world!")).toEqual([1, 2, 3]);
    expect(tok.eosTokenId).toBe(8);
    expect(tok.padTokenId).toBe(6);
    expect(tok.vocabSize).toBe(9);
    expect(tok.renderChat([{ role: "user", content: "hello" }])).toBe("user hello <|im_end|>assistant");
    expect(tok.encodeChat([{ role: "user", content: "hello" }])).toEqual([4, 1, 8, 5]);
    expect(tok.decode([1, 2, 8], { skipSpecialTokens: true })).toBe("hello world");
    expect(() => tok.encode("hello moon")).toThrow('piece "moon" has no id');
    expect(() => tok.decode([9])).toThrow("id 9 at position 0 is outside [0, 9)");
  });

  it("falls back to ChatML without a template and to <|im_end|> without an eos_token", () => {
    const tok = new HfTokenizer(wordLevelFiles({}));
    expect(tok.eosTokenId).toBe(8);
    expect(tok.padTokenId).toBe(8);
    expect(tok.stopTokenIds).toEqual([8, 6]);
    expect(tok.encodeChat([{ role: "user", content: "hello" }])).toEqual([7, 4, 1, 8, 7, 5]);
  });

  it("applies BPE merges", () => {
    const tok = new HfTokenizer(bpeFiles);
    expect(tok.encode("abab ab ba")).toEqual([4, 3, 2, 1]);
    expect(tok.eosTokenId).toBe(5); // <|endoftext|> when there is neither eos_token nor <|im_end|>
  });

  it("names a configured special token that is not in the vocabulary", () => {
    expect(() => new HfTokenizer(wordLevelFiles({ eos_token: "</s>" }))).toThrow(
      'tokenizer_config.json: eos_token "</s>" is not in the vocabulary',
    );
  });

  it("keeps its files byte for byte", () => {
    const files = wordLevelFiles({ chat_template: CHATML_TEMPLATE });
    expect(new HfTokenizer(files).toFiles()).toEqual(files);
  });
});

describe("loadTokenizer", () => {
  it("picks the built-in byte tokenizer, or HF from tokenizer.json", () => {
    expect(loadTokenizer(new ByteTokenizer().toFiles())).toBeInstanceOf(ByteTokenizer);
    expect(loadTokenizer(wordLevelFiles({}))).toBeInstanceOf(HfTokenizer);
    expect(loadTokenizer(bpeFiles)).toBeInstanceOf(HfTokenizer);
  });

  it("names what is missing or wrong", () => {
    expect(() => loadTokenizer({})).toThrow("tokenizer.json is missing");
    expect(() =>
      loadTokenizer({ "tokenizer_config.json": jsonFile({ troupe_tokenizer: "sentencepiece" }) }),
    ).toThrow('unknown troupe_tokenizer "sentencepiece"');
    expect(() => loadTokenizer({ "tokenizer.json": new TextEncoder().encode("{") })).toThrow(
      "tokenizer.json: not valid JSON",
    );
  });
});

describe("encodeSequence", () => {
  it("encodes the prompt with the chat template and the completion ending in <|im_end|>", () => {
    const tok = new ByteTokenizer();
    const messages = [{ role: "user" as const, content: "hi" }];
    expect(encodeSequence(tok, messages, "ok")).toEqual({
      promptTokenIds: tok.encodeChat(messages),
      completionTokenIds: [111, 107, 258],
    });
    expect(encodeSequence(tok, messages).completionTokenIds).toEqual([]);
  });
});
