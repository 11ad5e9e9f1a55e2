/**
 * A real OpenAI-compatible HTTP server for the tests (node:http on 127.0.0.1, a free port), that
 * answers like vLLM: /v1/completions (token-id or text prompts, echo scoring), /v1/chat/completions
 * (ChatML template), `token_id:N` tokens for return_tokens_as_token_ids, `token_ids` /
 * `prompt_token_ids` for return_token_ids (when `returnTokenIds`), the LoRA adapter endpoints and
 * SGLang's full-weight reload route.
 *
 * Its "model" is a deterministic function, so tests know every answer exactly: the reply to a
 * request with seed s is the UTF-8 bytes of `s<s>` (byte tokenizer ids) followed by <|im_end|>
 * (258), cut at max_tokens; the log-prob of token t after token p is  −(((31·p + t) mod 97) + 1)/100.
 *
 * Faults are scheduled per request, in arrival order: an HTTP status (with Retry-After), a delay, a
 * dropped connection, or a raw body.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ByteTokenizer } from "@troupe/engine";

export type Fault =
  | {
      readonly kind: "status";
      readonly status: number;
      readonly message?: string;
      readonly retryAfter?: string;
    }
  | { readonly kind: "delay"; readonly ms: number }
  | { readonly kind: "drop" }
  | { readonly kind: "json"; readonly json: unknown }
  | { readonly kind: "raw"; readonly text: string };

/** One of each failure a client retries: a server error (`status`), a 429 to retry at once, a drop. */
export function retryableFaults(status = 500): Fault[] {
  return [{ kind: "status", status }, { kind: "status", status: 429, retryAfter: "0" }, { kind: "drop" }];
}

export interface ReceivedRequest {
  readonly path: string;
  // biome-ignore lint/suspicious/noExplicitAny: request bodies are inspected field by field in tests
  readonly body: any;
  readonly headers: IncomingMessage["headers"];
  readonly start: number;
  end?: number;
}

export interface StubOptions {
  /** Base models served (adapters are added by load_lora_adapter). */
  readonly models?: readonly string[];
  /** Adapters loaded at start, name → path (vLLM --lora-modules). */
  readonly adapters?: Readonly<Record<string, string>>;
  /** Answer `token_ids` / `prompt_token_ids` when asked (vLLM ≥ 0.10.2). */
  readonly returnTokenIds?: boolean;
  /** Latency of every answer (ms), so requests overlap. */
  readonly latencyMs?: number;
}

export const IM_END_ID = 258;
/** SGLang's full-weight reload route, which the stub serves too. */
export const RELOAD_ROUTE = "/update_weights_from_disk";
const tokenizer = new ByteTokenizer();

/** The stub model's log-prob of token t after token p. */
export function stubLogprob(prev: number, token: number): number {
  return -(((31 * prev + token) % 97) + 1) / 100;
}

/** The stub model's reply to seed s: bytes of `s<seed>` then <|im_end|>, cut at maxTokens. */
export function stubReply(seed: number, maxTokens: number): { ids: number[]; finish: "stop" | "length" } {
  const full = [...tokenizer.encode(`s${seed}`), IM_END_ID];
  return full.length <= maxTokens
    ? { ids: full, finish: "stop" }
    : { ids: full.slice(0, maxTokens), finish: "length" };
}

export class StubOpenAIServer {
  readonly requests: ReceivedRequest[] = [];
  readonly faults: Fault[] = [];
  readonly adapters = new Map<string, string>();
  /** The model folders POSTed to the full-weight reload route, in order. */
  readonly reloads: string[] = [];
  inFlight = 0;
  maxInFlight = 0;
  url = "";
  private readonly server: Server;
  private readonly models: Set<string>;

  private constructor(private readonly options: StubOptions) {
    this.models = new Set(options.models ?? ["base"]);
    for (const [name, path] of Object.entries(options.adapters ?? {})) this.adapters.set(name, path);
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  static async start(options: StubOptions = {}): Promise<StubOpenAIServer> {
    const stub = new StubOpenAIServer(options);
    await new Promise<void>((resolve) => stub.server.listen(0, "127.0.0.1", resolve));
    stub.url = `http://127.0.0.1:${(stub.server.address() as AddressInfo).port}`;
    return stub;
  }

  /** Queues faults for the next requests, in order; later requests are answered normally. */
  schedule(...faults: Fault[]): void {
    this.faults.push(...faults);
  }

  paths(): string[] {
    return this.requests.map((r) => r.path);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    let text = "";
    for await (const chunk of req) text += chunk;
    const record: ReceivedRequest = {
      path: req.url ?? "",
      body: text === "" ? undefined : JSON.parse(text),
      headers: req.headers,
      start: performance.now(),
    };
    this.requests.push(record);
    res.on("close", () => {
      this.inFlight -= 1;
      record.end = performance.now();
    });

    const fault = this.faults.shift();
    if (this.options.latencyMs) await wait(this.options.latencyMs);
    if (fault?.kind === "delay") await wait(fault.ms);
    if (res.destroyed) return;
    if (fault?.kind === "drop") {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === "status") {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (fault.retryAfter !== undefined) headers["retry-after"] = fault.retryAfter;
      res.writeHead(fault.status, headers);
      res.end(errorJson(fault.message ?? `injected ${fault.status}`, fault.status));
      return;
    }
    if (fault?.kind === "json") {
      send(res, 200, fault.json);
      return;
    }
    if (fault?.kind === "raw") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(fault.text);
      return;
    }
    this.answer(record, res);
  }

  private answer(request: ReceivedRequest, res: ServerResponse): void {
    const body = request.body;
    switch (request.path) {
      case "/v1/load_lora_adapter": {
        if (this.adapters.has(body.lora_name) && body.load_inplace !== true) {
          send(
            res,
            400,
            JSON.parse(errorJson(`The lora adapter '${body.lora_name}' has already been loaded.`, 400)),
          );
          return;
        }
        this.adapters.set(body.lora_name, body.lora_path);
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`Success: LoRA adapter '${body.lora_name}' added successfully.`);
        return;
      }
      case "/v1/unload_lora_adapter": {
        if (!this.adapters.delete(body.lora_name)) {
          send(res, 404, JSON.parse(errorJson(`The lora adapter '${body.lora_name}' cannot be found.`, 404)));
          return;
        }
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`Success: LoRA adapter '${body.lora_name}' removed successfully.`);
        return;
      }
      case RELOAD_ROUTE: {
        this.reloads.push(body.model_path);
        send(res, 200, { success: true, message: "Succeeded to update model weights." });
        return;
      }
      case "/v1/completions":
      case "/v1/chat/completions":
        break;
      default:
        send(res, 404, { detail: "Not Found" });
        return;
    }
    if (!this.models.has(body.model) && !this.adapters.has(body.model)) {
      send(res, 404, JSON.parse(errorJson(`The model \`${body.model}\` does not exist.`, 404)));
      return;
    }
    const asIds = body.return_tokens_as_token_ids === true;
    const spell = (id: number) => (asIds ? `token_id:${id}` : tokenizer.decode([id]));
    const textLogprobs = (ids: readonly number[], lps: readonly (number | null)[]) => ({
      tokens: ids.map(spell),
      token_logprobs: lps,
      top_logprobs: null,
      text_offset: [],
    });
    const withIds = this.options.returnTokenIds === true && body.return_token_ids === true;

    if (request.path === "/v1/chat/completions") {
      const promptIds = tokenizer.encodeChat(body.messages);
      const { ids, finish } = stubReply(body.seed ?? 0, body.max_tokens ?? 16);
      const lps = chainLogprobs(promptIds.at(-1)!, ids);
      send(res, 200, {
        id: "chatcmpl-stub",
        object: "chat.completion",
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: tokenizer.decode(ids, { skipSpecialTokens: true }) },
            finish_reason: finish,
            logprobs: {
              content: ids.map((id, i) => ({ token: spell(id), logprob: lps[i], top_logprobs: [] })),
            },
            ...(withIds ? { token_ids: ids } : {}),
          },
        ],
        ...(withIds ? { prompt_token_ids: promptIds } : {}),
        usage: usage(promptIds.length, ids.length),
      });
      return;
    }

    const promptIds: number[] = typeof body.prompt === "string" ? tokenizer.encode(body.prompt) : body.prompt;
    if (body.echo === true) {
      // Scoring: the prompt's log-probs (the first is null), then one generated token.
      const generated = IM_END_ID;
      const all = [...promptIds, generated];
      const lps: (number | null)[] = all.map((id, i) => (i === 0 ? null : stubLogprob(all[i - 1]!, id)));
      const choice = {
        text: tokenizer.decode(all),
        finish_reason: "length",
        logprobs: textLogprobs(all, lps),
      };
      send(res, 200, textCompletion(body.model, choice, usage(promptIds.length, 1)));
      return;
    }
    const { ids, finish } = stubReply(body.seed ?? 0, body.max_tokens ?? 16);
    const lps = chainLogprobs(promptIds.at(-1)!, ids);
    const choice = {
      text: tokenizer.decode(ids, { skipSpecialTokens: true }),
      finish_reason: finish,
      logprobs: textLogprobs(ids, lps),
      ...(withIds ? { token_ids: ids, prompt_token_ids: promptIds } : {}),
    };
    send(res, 200, textCompletion(body.model, choice, usage(promptIds.length, ids.length)));
    return;
  }
}

/** Log-probs of `ids` generated after `prev`, each conditioned on the token before it. */
export function chainLogprobs(prev: number, ids: readonly number[]): number[] {
  return ids.map((id, i) => stubLogprob(i === 0 ? prev : ids[i - 1]!, id));
}

/** An answer's `usage` block. */
function usage(promptTokens: number, completionTokens: number) {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}

/** A /v1/completions answer with one choice. */
function textCompletion(model: string, choice: object, usage: object) {
  return { id: "cmpl-stub", object: "text_completion", model, choices: [{ index: 0, ...choice }], usage };
}

function errorJson(message: string, code: number): string {
  return JSON.stringify({ error: { message, type: "BadRequestError", code } });
}

function send(res: ServerResponse, status: number, json: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(json));
}

function wait(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
