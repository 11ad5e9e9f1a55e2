/**
 * A real OpenAI-compatible HTTP server for tests (node:http on 127.0.0.1, a free port), backed by
 * the embedded ONNX engine: what it generates is what its loaded weights generate.
 *
 * - POST /v1/chat/completions: the model named by `model` completes the messages, answering like
 *   vLLM with return_token_ids (`token_ids`, `prompt_token_ids`, tokens spelled `token_id:N`).
 * - POST /v1/load_lora_adapter {lora_name, lora_path}: serves the checkpoint folder `lora_path`
 *   (HF layout, what the learner wrote) under the new name; a held name is refused as vLLM does.
 *   The embedded engine has no adapters, so the folder holds whole weights here.
 * - POST /v1/unload_lora_adapter {lora_name}.
 * - POST <reloadPath> {model_path}: the base model's weights are replaced by the folder's
 *   (SGLang's /update_weights_from_disk), after `reloadDelayMs`.
 * Every request is logged with its arrival and answer times; `fault` answers a path with a status
 * and a raw body instead.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join, relative } from "node:path";
import { samplingParams } from "@troupe/core";
import type { CheckpointFiles } from "@troupe/engine";
import { createOnnxEngine, type OnnxEngine } from "@troupe/engine-onnx";

export interface Logged {
  readonly path: string;
  // biome-ignore lint/suspicious/noExplicitAny: bodies are inspected field by field in tests
  readonly body: any;
  readonly start: number;
  end: number;
}

export interface OnnxServerOptions {
  /** The name the base model is served under, and its checkpoint. */
  readonly baseName: string;
  readonly base: CheckpointFiles;
  readonly reloadPath?: string;
  readonly reloadDelayMs?: number;
}

export class OnnxOpenAIServer {
  readonly log: Logged[] = [];
  /** Answers requests to this path with this status and raw body, while set. */
  fault: { path: string; status: number; body: string } | undefined;
  private readonly models = new Map<string, OnnxEngine>();
  private server: Server | undefined;
  baseUrl = "";

  private constructor(private readonly options: OnnxServerOptions) {}

  static async start(options: OnnxServerOptions): Promise<OnnxOpenAIServer> {
    const s = new OnnxOpenAIServer(options);
    s.models.set(
      options.baseName,
      await createOnnxEngine({ policies: [{ id: "m", checkpoint: options.base }] }),
    );
    s.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const entry: Logged = {
          path: req.url ?? "",
          body: JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}"),
          start: performance.now(),
          end: 0,
        };
        s.log.push(entry);
        s.handle(entry.path, entry.body).then(
          ({ status, body }) => {
            entry.end = performance.now();
            res.writeHead(status, { "content-type": "application/json" }).end(body);
          },
          (error: unknown) => {
            entry.end = performance.now();
            res.writeHead(500).end(JSON.stringify({ error: { message: String(error) } }));
          },
        );
      });
    });
    await new Promise<void>((resolve) => s.server!.listen(0, "127.0.0.1", resolve));
    s.baseUrl = `http://127.0.0.1:${(s.server.address() as AddressInfo).port}`;
    return s;
  }

  /** Requests to `path`, in arrival order. */
  requests(path: string): Logged[] {
    return this.log.filter((l) => l.path === path);
  }

  /** Names the server serves now. */
  served(): string[] {
    return [...this.models.keys()];
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
    await Promise.all([...this.models.values()].map((m) => m.close()));
  }

  // biome-ignore lint/suspicious/noExplicitAny: request bodies are JSON
  private async handle(path: string, body: any): Promise<{ status: number; body: string }> {
    if (this.fault?.path === path) return { status: this.fault.status, body: this.fault.body };
    const json = (status: number, value: unknown) => ({ status, body: JSON.stringify(value) });
    const error = (status: number, message: string) => json(status, { error: { message } });
    if (path === "/v1/chat/completions") {
      const engine = this.models.get(body.model);
      if (engine === undefined) return error(404, `The model \`${body.model}\` does not exist.`);
      const sampling = samplingParams({
        temperature: body.temperature,
        topP: body.top_p,
        topK: body.top_k === -1 ? 0 : body.top_k,
        maxTokens: body.max_tokens,
        stop: body.stop ?? [],
        stopTokenIds: body.stop_token_ids ?? [],
      });
      const [c] = await engine.generate(
        [{ policyId: "m", observation: { messages: body.messages }, seed: body.seed }],
        sampling,
      );
      return json(200, {
        object: "chat.completion",
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: c!.text },
            finish_reason: c!.finishReason,
            logprobs: {
              content: c!.tokenIds.map((id, i) => ({ token: `token_id:${id}`, logprob: c!.logprobs[i] })),
            },
            token_ids: c!.tokenIds,
          },
        ],
        prompt_token_ids: c!.promptTokenIds,
        usage: { prompt_tokens: c!.promptTokenIds.length, completion_tokens: c!.tokenIds.length },
      });
    }
    if (path === "/v1/load_lora_adapter") {
      if (this.models.has(body.lora_name)) {
        return error(400, `The lora adapter '${body.lora_name}' has already been loaded.`);
      }
      const engine = await createOnnxEngine({
        policies: [{ id: "m", checkpoint: readFolder(body.lora_path) }],
      });
      this.models.set(body.lora_name, engine);
      return { status: 200, body: `Success: LoRA adapter '${body.lora_name}' added successfully.` };
    }
    if (path === "/v1/unload_lora_adapter") {
      const engine = this.models.get(body.lora_name);
      if (engine === undefined || body.lora_name === this.options.baseName) {
        return error(404, `The lora adapter '${body.lora_name}' cannot be found.`);
      }
      this.models.delete(body.lora_name);
      await engine.close();
      return { status: 200, body: `Success: LoRA adapter '${body.lora_name}' removed successfully.` };
    }
    if (path === this.options.reloadPath) {
      await new Promise((r) => setTimeout(r, this.options.reloadDelayMs ?? 0));
      await this.models.get(this.options.baseName)!.load("m", readFolder(body.model_path));
      return json(200, { success: true, message: "Succeeded to update model weights." });
    }
    return error(404, `Not Found: ${path}`);
  }
}

/** Every file under `dir`, by path relative to it. */
export function readFolder(dir: string): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else out[relative(dir, path)] = new Uint8Array(readFileSync(path));
    }
  };
  walk(dir);
  return out;
}
