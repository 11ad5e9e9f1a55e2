/**
 * Tokenizers: text ↔ token ids, and chat messages → the prompt a policy sees.
 *
 * Two implementations behind one interface:
 * - `ByteTokenizer`, built in, for the tiny task models trained from scratch: ids 0–255 are the
 *   UTF-8 bytes, then three specials (256 <|endoftext|> = pad, 257 <|im_start|>, 258 <|im_end|>).
 *   Its `toFiles()` writes a genuine HF `tokenizer.json` (byte-level BPE with no merges whose vocab
 *   maps byte b to id b) and a `tokenizer_config.json` with a ChatML `chat_template`, so
 *   `transformers`' `AutoTokenizer` loads the same tokenizer for the GPU worker.
 * - `HfTokenizer`, over `@huggingface/tokenizers` (a pure-JS port of HF tokenizers) reading
 *   `tokenizer.json`, with the chat template of `tokenizer_config.json` rendered by
 *   `@huggingface/jinja` (ChatML when there is none).
 *
 * Chat format (ChatML, as Qwen's):
 *   <|im_start|>{role}\n{content}<|im_end|>\n   for each message, then, to ask for a reply,
 *   <|im_start|>assistant\n
 * The assistant's turn ends with <|im_end|>: that is `eosTokenId`, the token that stops generation.
 * Special-token strings inside text are encoded as the special tokens (as HF tokenizers do).
 */
import { Template } from "@huggingface/jinja";
import { Tokenizer as HfTokenizerCore } from "@huggingface/tokenizers";
import type { ChatMessage } from "@troupe/core";

export interface Tokenizer {
  /** Number of ids the tokenizer can produce (max id + 1); a model's vocab_size may be larger. */
  readonly vocabSize: number;
  /** The id that ends an assistant turn (stops generation). */
  readonly eosTokenId: number;
  readonly padTokenId: number;
  /** Ids that end generation: eosTokenId first, then any other end-of-text ids. */
  readonly stopTokenIds: readonly number[];
  /** Text → ids; special-token strings in the text become their ids; no BOS/EOS is added. */
  encode(text: string): number[];
  /** Ids → text; special tokens are kept as their strings unless skipSpecialTokens. */
  decode(ids: readonly number[], options?: { readonly skipSpecialTokens?: boolean }): string;
  /** The prompt text of a conversation; with addGenerationPrompt, ends by opening the assistant's turn. */
  renderChat(messages: readonly ChatMessage[], addGenerationPrompt?: boolean): string;
  /** encode(renderChat(messages, true)). */
  encodeChat(messages: readonly ChatMessage[]): number[];
  /** The tokenizer as HF files (tokenizer.json, tokenizer_config.json, …). */
  toFiles(): Record<string, Uint8Array>;
}

export const ENDOFTEXT = "<|endoftext|>";
export const IM_START = "<|im_start|>";
export const IM_END = "<|im_end|>";

/** ChatML as a Jinja template (the same text ByteTokenizer.renderChat produces). */
export const CHATML_TEMPLATE =
  "{%- for message in messages %}" +
  "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

const utf8 = new TextEncoder();

function renderChatML(messages: readonly ChatMessage[], addGenerationPrompt: boolean): string {
  let text = "";
  for (const m of messages) text += `${IM_START}${m.role}\n${m.content}${IM_END}\n`;
  if (addGenerationPrompt) text += `${IM_START}assistant\n`;
  return text;
}

/** Splits text into plain runs and special tokens (longest special first at each position). */
function splitOnSpecials(text: string, specials: ReadonlyMap<string, number>): (string | number)[] {
  const parts: (string | number)[] = [];
  const names = [...specials.keys()].sort((a, b) => b.length - a.length);
  let plainStart = 0;
  let i = 0;
  while (i < text.length) {
    const hit = text[i] === "<" ? names.find((s) => text.startsWith(s, i)) : undefined;
    if (hit === undefined) {
      i += 1;
      continue;
    }
    if (i > plainStart) parts.push(text.slice(plainStart, i));
    parts.push(specials.get(hit)!);
    i += hit.length;
    plainStart = i;
  }
  if (plainStart < text.length) parts.push(text.slice(plainStart));
  return parts;
}

/** A special token as tokenizer.json lists it in `added_tokens`: matched whole, never split or normalized. */
export function hfSpecialToken(content: string, id: number) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

/**
 * GPT-2's reversible byte → printable-character map used by byte-level BPE: printable Latin-1
 * bytes map to themselves, the others to U+0100 upwards, in byte order.
 */
export function bytesToUnicode(): string[] {
  const printable = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const chars: string[] = [];
  let next = 0;
  for (let b = 0; b < 256; b++) chars.push(String.fromCharCode(printable(b) ? b : 256 + next++));
  return chars;
}

export class ByteTokenizer implements Tokenizer {
  static readonly SPECIALS = [ENDOFTEXT, IM_START, IM_END] as const;
  readonly vocabSize = 259;
  readonly padTokenId = 256;
  readonly imStartTokenId = 257;
  readonly eosTokenId = 258;
  readonly stopTokenIds = [258, 256];
  private readonly specials = new Map<string, number>(ByteTokenizer.SPECIALS.map((s, i) => [s, 256 + i]));

  encode(text: string): number[] {
    const ids: number[] = [];
    for (const part of splitOnSpecials(text, this.specials)) {
      if (typeof part === "number") ids.push(part);
      else for (const b of utf8.encode(part)) ids.push(b);
    }
    return ids;
  }

  decode(ids: readonly number[], options: { readonly skipSpecialTokens?: boolean } = {}): string {
    let text = "";
    let bytes: number[] = [];
    const flush = () => {
      // Invalid UTF-8 (e.g. a cut multi-byte character) becomes U+FFFD, as HF's byte-level decoder does.
      if (bytes.length) text += new TextDecoder().decode(new Uint8Array(bytes));
      bytes = [];
    };
    for (const [i, id] of ids.entries()) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new Error(`ByteTokenizer.decode: id ${id} at position ${i} is outside [0, ${this.vocabSize})`);
      }
      if (id < 256) {
        bytes.push(id);
        continue;
      }
      flush();
      if (!options.skipSpecialTokens) text += ByteTokenizer.SPECIALS[id - 256];
    }
    flush();
    return text;
  }

  renderChat(messages: readonly ChatMessage[], addGenerationPrompt = true): string {
    return renderChatML(messages, addGenerationPrompt);
  }

  encodeChat(messages: readonly ChatMessage[]): number[] {
    return this.encode(this.renderChat(messages, true));
  }

  /** The equivalent HF tokenizer.json (byte-level BPE, no merges) and tokenizer_config.json. */
  toFiles(): Record<string, Uint8Array> {
    const chars = bytesToUnicode();
    const vocab: Record<string, number> = {};
    chars.forEach((c, b) => {
      vocab[c] = b;
    });
    const addedTokens = ByteTokenizer.SPECIALS.map((content, i) => hfSpecialToken(content, 256 + i));
    const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false };
    const tokenizerJson = {
      version: "1.0",
      truncation: null,
      padding: null,
      added_tokens: addedTokens,
      normalizer: null,
      pre_tokenizer: byteLevel,
      post_processor: null,
      decoder: byteLevel,
      model: {
        type: "BPE",
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges: [],
      },
    };
    const tokenizerConfig = {
      troupe_tokenizer: "byte",
      tokenizer_class: "PreTrainedTokenizerFast",
      added_tokens_decoder: Object.fromEntries(addedTokens.map(({ id, ...rest }) => [String(id), rest])),
      bos_token: null,
      eos_token: IM_END,
      pad_token: ENDOFTEXT,
      unk_token: null,
      chat_template: CHATML_TEMPLATE,
      clean_up_tokenization_spaces: false,
      model_max_length: 2048,
    };
    return {
      "tokenizer.json": utf8.encode(JSON.stringify(tokenizerJson)),
      "tokenizer_config.json": utf8.encode(JSON.stringify(tokenizerConfig, null, 2)),
    };
  }
}

/** A special token in tokenizer_config.json is a string or an AddedToken object `{content}`. */
function tokenText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (
    value !== null &&
    typeof value === "object" &&
    typeof (value as { content?: unknown }).content === "string"
  ) {
    return (value as { content: string }).content;
  }
  return undefined;
}

export interface HfTokenizerOptions {
  /** Extra ids that end generation (e.g. generation_config.json's eos_token_id list). */
  readonly extraStopTokenIds?: readonly number[];
}

export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly eosTokenId: number;
  readonly padTokenId: number;
  readonly stopTokenIds: readonly number[];
  private readonly core: HfTokenizerCore;
  private readonly template: Template | undefined;
  private readonly specialStrings: Record<string, string | undefined>;

  constructor(
    private readonly files: Readonly<Record<string, Uint8Array>>,
    options: HfTokenizerOptions = {},
  ) {
    const tokenizerJson = parseJsonFile(files, "tokenizer.json");
    if (tokenizerJson === undefined) throw new Error("tokenizer: tokenizer.json is missing");
    const config = (parseJsonFile(files, "tokenizer_config.json") ?? {}) as Record<string, unknown>;
    try {
      this.core = new HfTokenizerCore(tokenizerJson, config);
    } catch (e) {
      throw new Error(`tokenizer.json: cannot build the tokenizer: ${(e as Error).message}`);
    }
    const vocab = this.core.get_vocab(true);
    let maxId = -1;
    for (const id of vocab.values()) if (id > maxId) maxId = id;
    this.vocabSize = maxId + 1;

    this.specialStrings = {
      bos_token: tokenText(config.bos_token),
      eos_token: tokenText(config.eos_token),
      pad_token: tokenText(config.pad_token),
      unk_token: tokenText(config.unk_token),
    };
    const idOf = (field: string, text: string | undefined): number | undefined => {
      if (text === undefined) return undefined;
      const id = this.core.token_to_id(text);
      if (id === undefined)
        throw new Error(`tokenizer_config.json: ${field} "${text}" is not in the vocabulary`);
      return id;
    };
    // Without a configured eos, fall back to the ChatML end of turn or <|endoftext|> when present.
    const eos =
      idOf("eos_token", this.specialStrings.eos_token) ??
      this.core.token_to_id(IM_END) ??
      this.core.token_to_id(ENDOFTEXT);
    if (eos === undefined) {
      throw new Error(
        "tokenizer_config.json: eos_token is missing and the vocabulary has neither <|im_end|> nor <|endoftext|>",
      );
    }
    this.eosTokenId = eos;
    this.padTokenId = idOf("pad_token", this.specialStrings.pad_token) ?? eos;
    const endOfText = this.core.token_to_id(ENDOFTEXT);
    const stops = [
      eos,
      ...(options.extraStopTokenIds ?? []),
      ...(endOfText === undefined ? [] : [endOfText]),
    ];
    this.stopTokenIds = [...new Set(stops)];

    const templateSource = config.chat_template;
    if (templateSource !== undefined && templateSource !== null) {
      if (typeof templateSource !== "string") {
        // A list of named templates: take "default".
        const named = Array.isArray(templateSource)
          ? (templateSource as { name?: string; template?: string }[]).find((t) => t.name === "default")
          : undefined;
        if (named?.template === undefined) {
          throw new Error(
            "tokenizer_config.json: chat_template must be a string or a list with a 'default' entry",
          );
        }
        this.template = new Template(named.template);
      } else {
        try {
          this.template = new Template(templateSource);
        } catch (e) {
          throw new Error(`tokenizer_config.json: chat_template does not parse: ${(e as Error).message}`);
        }
      }
    }
  }

  encode(text: string): number[] {
    const { ids, tokens } = this.core.encode(text, { add_special_tokens: false });
    // tokenizers.js leaves out-of-vocabulary pieces as `undefined` when the model has no usable
    // unk token (seen with WordLevel); an id list with holes must not reach a model.
    const hole = ids.findIndex((id: number) => !Number.isInteger(id));
    if (hole >= 0)
      throw new Error(`tokenizer.encode: piece ${JSON.stringify(tokens[hole])} has no id in the vocabulary`);
    return ids;
  }

  decode(ids: readonly number[], options: { readonly skipSpecialTokens?: boolean } = {}): string {
    for (const [i, id] of ids.entries()) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new Error(`tokenizer.decode: id ${id} at position ${i} is outside [0, ${this.vocabSize})`);
      }
    }
    if (ids.length === 0) return ""; // tokenizers.js throws on an empty list
    return this.core.decode([...ids], { skip_special_tokens: options.skipSpecialTokens ?? false });
  }

  renderChat(messages: readonly ChatMessage[], addGenerationPrompt = true): string {
    if (this.template === undefined) return renderChatML(messages, addGenerationPrompt);
    return this.template.render({
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: addGenerationPrompt,
      ...this.specialStrings,
    });
  }

  encodeChat(messages: readonly ChatMessage[]): number[] {
    return this.encode(this.renderChat(messages, true));
  }

  toFiles(): Record<string, Uint8Array> {
    const out: Record<string, Uint8Array> = {};
    for (const name of TOKENIZER_FILES)
      if (this.files[name] !== undefined) out[name] = this.files[name]!.slice();
    return out;
  }
}

/** The files a tokenizer is made of (kept in checkpoints). */
export const TOKENIZER_FILES = [
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
] as const;

function parseJsonFile(files: Readonly<Record<string, Uint8Array>>, name: string): unknown {
  const bytes = files[name];
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new Error(`${name}: not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * A tokenizer from its files: the built-in byte tokenizer when tokenizer_config.json says
 * `"troupe_tokenizer": "byte"`, otherwise an HF tokenizer from tokenizer.json.
 */
export function loadTokenizer(
  files: Readonly<Record<string, Uint8Array>>,
  options: HfTokenizerOptions = {},
): Tokenizer {
  const config = parseJsonFile(files, "tokenizer_config.json") as Record<string, unknown> | undefined;
  const kind = config?.troupe_tokenizer;
  if (kind !== undefined) {
    if (kind !== "byte")
      throw new Error(`tokenizer_config.json: unknown troupe_tokenizer ${JSON.stringify(kind)}`);
    return new ByteTokenizer();
  }
  if (files["tokenizer.json"] === undefined) {
    throw new Error(
      "tokenizer: tokenizer.json is missing (and tokenizer_config.json names no built-in tokenizer)",
    );
  }
  return new HfTokenizer(files, options);
}

/**
 * Token ids of a prompt and, optionally, a completion as the policy would have produced it: the
 * prompt is `encodeChat(messages)`; the completion text is encoded on its own (generation starts
 * after the prompt's last token, so the two are never merged across the boundary) and ends with
 * the end-of-turn token `eosTokenId`, as a sampled completion stopped by it does.
 */
export function encodeSequence(
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  completion?: string,
): { promptTokenIds: number[]; completionTokenIds: number[] } {
  const promptTokenIds = tokenizer.encodeChat(messages);
  const completionTokenIds =
    completion === undefined ? [] : [...tokenizer.encode(completion), tokenizer.eosTokenId];
  return { promptTokenIds, completionTokenIds };
}
