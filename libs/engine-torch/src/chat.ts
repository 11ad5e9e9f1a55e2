/**
 * A policy's chat template with its arguments. Tokenization stays in the controller; this wraps a
 * tokenizer so that its prompts are the model's own template rendered as transformers'
 * `apply_chat_template` renders it (apps/engine-torch/troupe_worker/chat_template.py is the
 * reference the tests compare against):
 *
 * - the template is `chat_template.jinja` when the folder has one (transformers reads it first),
 *   else tokenizer_config.json's `chat_template` (a string, or the "default" of a named list);
 * - variables: messages, add_generation_prompt, the special-token strings (bos_token, eos_token,
 *   pad_token, unk_token), then the recipe's template kwargs — e.g. `enable_thinking: false`, without
 *   which Qwen3 opens every answer with a <think> block;
 * - trim_blocks / lstrip_blocks and `raise_exception` as in transformers (@huggingface/jinja's defaults).
 */
import { Template } from "@huggingface/jinja";
import type { ChatMessage } from "@troupe/core";
import type { Tokenizer } from "@troupe/engine";

const SPECIALS = ["bos_token", "eos_token", "pad_token", "unk_token"] as const;

function json(
  files: Readonly<Record<string, Uint8Array>>,
  name: string,
): Record<string, unknown> | undefined {
  const bytes = files[name];
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`${name}: not valid JSON: ${(e as Error).message}`);
  }
}

/** The chat template a model folder's files define, or undefined when they define none. */
export function chatTemplateOf(files: Readonly<Record<string, Uint8Array>>): string | undefined {
  const jinja = files["chat_template.jinja"];
  if (jinja !== undefined) return new TextDecoder().decode(jinja);
  const source = json(files, "tokenizer_config.json")?.chat_template;
  if (source === undefined || source === null) return undefined;
  if (typeof source === "string") return source;
  const named = Array.isArray(source)
    ? (source as { name?: string; template?: string }[]).find((t) => t.name === "default")
    : undefined;
  if (named?.template === undefined) {
    throw new Error("tokenizer_config.json: chat_template must be a string or a list with a 'default' entry");
  }
  return named.template;
}

/** Special-token strings (`bos_token` …) from tokenizer_config.json (a string or {content}). */
export function specialTokenStrings(files: Readonly<Record<string, Uint8Array>>): Record<string, string> {
  const config = json(files, "tokenizer_config.json") ?? {};
  const out: Record<string, string> = {};
  for (const name of SPECIALS) {
    const v = config[name] as unknown;
    if (typeof v === "string") out[name] = v;
    else if (typeof v === "object" && v !== null && typeof (v as { content?: unknown }).content === "string")
      out[name] = (v as { content: string }).content;
  }
  return out;
}

/**
 * `tokenizer` with prompts rendered by `template` and `kwargs`; every other method is the
 * tokenizer's own.
 */
export function withChatTemplate(
  tokenizer: Tokenizer,
  template: string,
  specialTokens: Readonly<Record<string, string>>,
  kwargs: Readonly<Record<string, unknown>>,
): Tokenizer {
  let compiled: Template;
  try {
    compiled = new Template(template);
  } catch (e) {
    throw new Error(`chat template does not parse: ${(e as Error).message}`);
  }
  const renderChat = (messages: readonly ChatMessage[], addGenerationPrompt = true): string =>
    compiled.render({
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: addGenerationPrompt,
      ...specialTokens,
      ...kwargs,
    });
  return {
    vocabSize: tokenizer.vocabSize,
    eosTokenId: tokenizer.eosTokenId,
    padTokenId: tokenizer.padTokenId,
    stopTokenIds: tokenizer.stopTokenIds,
    encode: (text) => tokenizer.encode(text),
    decode: (ids, options) => tokenizer.decode(ids, options),
    renderChat,
    encodeChat: (messages) => tokenizer.encode(renderChat(messages, true)),
    toFiles: () => tokenizer.toFiles(),
  };
}
