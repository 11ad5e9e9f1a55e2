/**
 * Chat templates with arguments: a Qwen3-style template (thinking switch, raise_exception, trimmed
 * blocks) rendered by the controller equals the same template rendered the way transformers'
 * apply_chat_template does (jinja2 in troupe_worker/chat_template.py), with enable_thinking false
 * and true; and the engine reads chat_template.jinja before tokenizer_config.json.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ChatMessage } from "@troupe/core";
import { ByteTokenizer } from "@troupe/engine";
import { describe, expect, it } from "vitest";
import { chatTemplateOf, specialTokenStrings, withChatTemplate } from "../src/chat.ts";
import { PYTHON } from "./torch-available.ts";

/** The shape of Qwen3's template: system first, thinking stripped from past turns, the switch at the end. */
const QWEN3_LIKE = `{%- if messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role not in ['system', 'user', 'assistant'] %}
        {{- raise_exception('unknown role ' + message.role) }}
    {%- endif %}
    {%- if message.role == 'user' %}
        {{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}
    {%- elif message.role == 'assistant' %}
        {%- set content = message.content %}
        {%- if '</think>' in content %}
            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}
        {%- endif %}
        {{- '<|im_start|>assistant\\n' + content + '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    {%- endif %}
{%- endif %}
`;

const MESSAGES: ChatMessage[] = [
  { role: "system", content: "Solve the maze." },
  { role: "user", content: "Grid: S.#\n..G" },
  { role: "assistant", content: "<think>\nleft?\n</think>\n\nRIGHT" },
  { role: "user", content: "Again — naïve café" },
];

function transformersRender(kwargs: Record<string, unknown>): string {
  const run = spawnSync(PYTHON, ["-m", "troupe_worker.chat_template"], {
    input: JSON.stringify({ template: QWEN3_LIKE, messages: MESSAGES, add_generation_prompt: true, kwargs }),
    env: { ...process.env, PYTHONPATH: WORKER_DIR },
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(run.stderr);
  return run.stdout;
}

const WORKER_DIR = fileURLToPath(new URL("../../../apps/engine-torch", import.meta.url));
const jinja2 = spawnSync(PYTHON, ["-c", "import jinja2"], { stdio: "ignore" }).status === 0;

describe.skipIf(!jinja2)("chat templates with arguments", () => {
  it("renders enable_thinking=false (and true) as transformers does", () => {
    const byte = new ByteTokenizer();
    for (const enable_thinking of [false, true]) {
      const tok = withChatTemplate(byte, QWEN3_LIKE, {}, { enable_thinking });
      const ours = tok.renderChat(MESSAGES, true);
      expect(ours).toBe(transformersRender({ enable_thinking }));
      expect(ours.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n")).toBe(!enable_thinking);
      expect(tok.encodeChat(MESSAGES)).toEqual(byte.encode(ours));
    }
    expect(transformersRender({ enable_thinking: false })).toBe(
      "<|im_start|>system\nSolve the maze.<|im_end|>\n<|im_start|>user\nGrid: S.#\n..G<|im_end|>\n" +
        "<|im_start|>assistant\nRIGHT<|im_end|>\n<|im_start|>user\nAgain — naïve café<|im_end|>\n" +
        "<|im_start|>assistant\n<think>\n\n</think>\n\n",
    );
  });

  it("reads chat_template.jinja first, then tokenizer_config.json, and the special-token strings", () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    const config = enc(
      JSON.stringify({ chat_template: "config", eos_token: { content: "<|im_end|>" }, bos_token: null }),
    );
    expect(chatTemplateOf({ "tokenizer_config.json": config, "chat_template.jinja": enc("file") })).toBe(
      "file",
    );
    expect(chatTemplateOf({ "tokenizer_config.json": config })).toBe("config");
    expect(chatTemplateOf({})).toBeUndefined();
    expect(specialTokenStrings({ "tokenizer_config.json": config })).toEqual({ eos_token: "<|im_end|>" });
    const bad = withChatTemplate(new ByteTokenizer(), QWEN3_LIKE, {}, {});
    expect(() => bad.renderChat([{ role: "tool" as ChatMessage["role"], content: "x" }])).toThrow(
      /unknown role tool/,
    );
  });
});
