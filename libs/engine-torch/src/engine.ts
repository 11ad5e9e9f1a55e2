/**
 * `TorchEngine`: the Engine interface over a PyTorch worker process. Tokenization, chat templates
 * and stop strings stay here (the same @troupe/engine tokenizers the embedded engine uses, so a
 * prompt is the same token ids in both engines); the worker only sees token ids.
 *
 * Models and policies:
 *   models:   { base: { kind: "path", path: "/models/Qwen3-1.7B" } }
 *   policies: [{ id: "coder", model: "base", lora: { r: 16 } },        // per-role LoRA adapters
 *              { id: "tester", model: "base", lora: { r: 16 } }]       //   on one frozen base
 * A policy without `lora` trains a full copy of its model (a shared policy, per-role full models,
 * or heterogeneous models each with their own tokenizer).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  type Completion,
  type Observation,
  type PolicyId,
  type SamplingParams,
  SamplingParamsSchema,
} from "@troupe/core";
import {
  ByteTokenizer,
  type CheckpointFiles,
  type Engine,
  type EngineGenerateRequest,
  encodeSequence,
  generateByPolicy,
  loadTokenizer,
  modelConfigToJson,
  type PolicyInfo,
  type QwenConfig,
  TOKENIZER_FILES,
  type Tokenizer,
  type TokenSequence,
  type TrainMetrics,
  type TrainSequence,
  type TrainStepConfig,
  validateQwenConfig,
} from "@troupe/engine";
import { z } from "zod";
import { chatTemplateOf, specialTokenStrings, withChatTemplate } from "./chat.ts";
import {
  FilesResultSchema,
  type Frame,
  GenerateResultSchema,
  LoadModelResultSchema,
  type PayloadValue,
  PolicyInfoSchema,
  parseResult,
  payload,
  TrainMetricsSchema,
  type WorkerInfo,
} from "./protocol.ts";
import { WorkerProcess, type WorkerProcessOptions } from "./worker-process.ts";

export const LoraSpecSchema = z.object({
  /** Rank r of A [r, in] and B [out, r]. */
  r: z.number().int().positive().default(16),
  /** α: the update is scaled by α / r (default 2r). */
  alpha: z.number().positive().optional(),
  /** Last names of the Linear modules that get adapters (default: every attention and MLP projection). */
  targetModules: z.array(z.string().min(1)).min(1).optional(),
});

export const TorchPolicySpecSchema = z.object({
  id: z.string().min(1),
  /** Key of `models`. */
  model: z.string().min(1),
  /** A LoRA adapter on the (frozen, shared) model instead of a full trainable copy. */
  lora: LoraSpecSchema.optional(),
  /** Seed of the adapter's initialisation (A ~ kaiming-uniform), so runs are reproducible; default: torch's global generator. */
  seed: z.number().int().min(0).optional(),
});
export type TorchPolicySpec = z.input<typeof TorchPolicySpecSchema>;

/** Where a model's config, weights and tokenizer come from. */
export type TorchModelSource =
  /** Checkpoint files in the HF layout (what `save`/encodeCheckpoint produce). */
  | { readonly kind: "files"; readonly files: CheckpointFiles; readonly gradientCheckpointing?: boolean }
  /** A local HF model directory, read by the worker (config.json, *.safetensors, tokenizer files). */
  | { readonly kind: "path"; readonly path: string; readonly gradientCheckpointing?: boolean }
  /** Random initialisation (seeded), with the built-in byte tokenizer unless tokenizer files are given. */
  | {
      readonly kind: "init";
      readonly config: QwenConfig;
      readonly seed?: number;
      readonly tokenizerFiles?: CheckpointFiles;
      readonly gradientCheckpointing?: boolean;
    };

export interface TorchEngineOptions extends WorkerProcessOptions {
  readonly models: Readonly<Record<string, TorchModelSource>>;
  readonly policies: readonly TorchPolicySpec[];
  /**
   * Arguments of every model's chat template, as transformers' apply_chat_template takes them
   * (e.g. `{ enable_thinking: false }` for Qwen3). Given to a model without a template: an error.
   */
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>>;
  /** Where save()/load() stage checkpoint folders for the worker (default: the OS temp folder). */
  readonly scratchDir?: string;
  /**
   * Padded tokens (rows × the longest) per scoring chunk in `logprobs`, as trainStep's
   * `maxTokensPerMicroBatch` bounds its micro-batches (GPU memory); unbounded when absent.
   */
  readonly maxTokensPerMicroBatch?: number | undefined;
  /** Warnings (a model without a chat template), default console.warn. */
  readonly warn?: (message: string) => void;
}

interface PolicyState {
  info: PolicyInfo;
  readonly model: string;
  readonly tokenizer: Tokenizer;
}

interface ModelState {
  readonly tokenizer: Tokenizer;
  /** End-of-turn ids of config.json and generation_config.json (Qwen3's <|im_end|> is only there). */
  readonly eosTokenIds: readonly number[];
}

function int32(values: readonly number[], what: string): Int32Array {
  const out = new Int32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (!Number.isInteger(v) || v < -(2 ** 31) || v >= 2 ** 31)
      throw new Error(`${what}[${i}] is ${v}, not an int32`);
    out[i] = v;
  }
  return out;
}

function filesPayloads(files: Readonly<Record<string, Uint8Array>>): Map<string, PayloadValue> {
  return new Map(Object.entries(files).map(([name, bytes]) => [`file:${name}`, bytes]));
}

/** The files of a model folder the controller reads: the tokenizer, its chat template, generation defaults. */
const CONTROLLER_FILES = [...TOKENIZER_FILES, "chat_template.jinja", "generation_config.json"];

function readTokenizerFiles(dir: string): Record<string, Uint8Array> {
  const present = new Set(readdirSync(dir));
  const out: Record<string, Uint8Array> = {};
  for (const name of CONTROLLER_FILES) if (present.has(name)) out[name] = readFileSync(join(dir, name));
  return out;
}

/** Reads the named files (relative paths, e.g. dcp/__0_0.distcp) of a folder. */
export function readFolder(dir: string, names: readonly string[]): CheckpointFiles {
  return Object.fromEntries(names.map((name) => [name, new Uint8Array(readFileSync(join(dir, name)))]));
}

function writeFolder(dir: string, files: CheckpointFiles): void {
  for (const [name, bytes] of Object.entries(files)) {
    if (name.split("/").some((part) => part === ".." || part === "")) {
      throw new Error(`torch engine: checkpoint file name "${name}" is not a plain relative path`);
    }
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), bytes);
  }
}

/** Index of the earliest occurrence of any stop string, −1 if none. */
export function firstStop(text: string, stops: readonly string[]): number {
  let best = -1;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (best < 0 || i < best)) best = i;
  }
  return best;
}

export async function createTorchEngine(options: TorchEngineOptions): Promise<TorchEngine> {
  const specs = options.policies.map((p, i) => {
    const parsed = TorchPolicySpecSchema.safeParse(p);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(`createTorchEngine: policies[${i}].${issue.path.join(".")}: ${issue.message}`);
    }
    if (options.models[parsed.data.model] === undefined) {
      throw new Error(
        `createTorchEngine: policies[${i}].model: no model "${parsed.data.model}" (models: ${Object.keys(options.models).join(", ") || "none"})`,
      );
    }
    return parsed.data;
  });
  const ids = new Set<string>();
  for (const s of specs) {
    if (ids.has(s.id)) throw new Error(`createTorchEngine: duplicate policy id "${s.id}"`);
    ids.add(s.id);
  }
  const worker = await WorkerProcess.start(options);
  try {
    const engine = new TorchEngine(worker, options);
    for (const [name, source] of Object.entries(options.models)) await engine.loadModel(name, source);
    for (const spec of specs) {
      // The last full policy of a model that no adapter uses trains the loaded weights in place; the others copy them.
      const laterFull = specs.slice(specs.indexOf(spec) + 1).some((s) => s.model === spec.model && !s.lora);
      const anyLora = specs.some((s) => s.model === spec.model && s.lora);
      await engine.addPolicy(spec, laterFull || anyLora);
    }
    return engine;
  } catch (e) {
    await worker.close();
    throw e;
  }
}

export class TorchEngine implements Engine {
  readonly kind = "torch";
  private readonly states = new Map<PolicyId, PolicyState>();
  private readonly models = new Map<string, ModelState>();
  private readonly chatTemplateKwargs: Readonly<Record<string, unknown>>;
  private readonly scratchDir: string;
  private readonly warn: (message: string) => void;
  private readonly maxTokensPerMicroBatch: number | undefined;

  constructor(
    private readonly worker: WorkerProcess,
    options: Pick<
      TorchEngineOptions,
      "chatTemplateKwargs" | "scratchDir" | "warn" | "maxTokensPerMicroBatch"
    > = {},
  ) {
    this.maxTokensPerMicroBatch = options.maxTokensPerMicroBatch;
    this.chatTemplateKwargs = options.chatTemplateKwargs ?? {};
    this.scratchDir = options.scratchDir ?? tmpdir();
    this.warn = options.warn ?? ((m) => console.warn(m));
  }

  /** The worker's process id (under torchrun: the torchrun launcher's), e.g. to watch or signal it. */
  get workerPid(): number | undefined {
    return this.worker.pid;
  }

  /** What the worker reported at the handshake: versions, device, world size, optional back ends. */
  get workerInfo(): WorkerInfo {
    return this.worker.info;
  }

  async loadModel(name: string, source: TorchModelSource): Promise<void> {
    let args: Record<string, unknown> = {
      name,
      gradientCheckpointing: source.gradientCheckpointing ?? false,
    };
    let payloads = new Map<string, PayloadValue>();
    let tokenizerFiles: Record<string, Uint8Array>;
    if (source.kind === "files") {
      payloads = filesPayloads(source.files);
      tokenizerFiles = { ...source.files };
    } else if (source.kind === "path") {
      args = { ...args, path: source.path };
      tokenizerFiles = readTokenizerFiles(source.path);
    } else {
      const config = validateQwenConfig(source.config);
      tokenizerFiles = { ...(source.tokenizerFiles ?? new ByteTokenizer().toFiles()) };
      args = { ...args, init: { config: modelConfigToJson(config), seed: source.seed ?? 0 } };
      payloads = filesPayloads(tokenizerFiles);
    }
    let tokenizer = loadTokenizer(tokenizerFiles);
    const template = chatTemplateOf(tokenizerFiles);
    const kwargs = Object.keys(this.chatTemplateKwargs);
    if (template !== undefined) {
      // The tokenizer already renders tokenizer_config.json's template without arguments; wrap it
      // when there are arguments or the template is chat_template.jinja, which it does not read.
      if (kwargs.length > 0 || tokenizerFiles["chat_template.jinja"] !== undefined) {
        tokenizer = withChatTemplate(
          tokenizer,
          template,
          specialTokenStrings(tokenizerFiles),
          this.chatTemplateKwargs,
        );
      }
    } else if (kwargs.length > 0) {
      throw new Error(
        `torch engine: model "${name}": chat template kwargs (${kwargs.join(", ")}) given, but the model has no chat template (chat_template.jinja or tokenizer_config.json)`,
      );
    } else if (source.kind === "path") {
      this.warn(
        `torch engine: model "${name}": ${source.path} has no chat template (chat_template.jinja or tokenizer_config.json chat_template); prompts use plain ChatML`,
      );
    }
    const reply = await this.worker.request("load_model", args, payloads);
    const loaded = parseResult("load_model", LoadModelResultSchema, reply.body);
    const vocab = loaded.config.vocab_size as number;
    if (tokenizer.vocabSize > vocab) {
      throw new Error(
        `torch engine: model "${name}": the tokenizer has ${tokenizer.vocabSize} ids, more than vocab_size ${vocab}`,
      );
    }
    const eosTokenIds = (loaded.eosTokenIds ?? []).filter((id) => id < tokenizer.vocabSize);
    this.models.set(name, { tokenizer, eosTokenIds });
  }

  async addPolicy(spec: z.output<typeof TorchPolicySpecSchema>, copy = true): Promise<void> {
    const reply = await this.worker.request("add_policy", {
      id: spec.id,
      model: spec.model,
      copy,
      ...(spec.lora ? { lora: spec.lora } : {}),
      ...(spec.seed !== undefined ? { seed: spec.seed } : {}),
    });
    const info = parseResult("add_policy", PolicyInfoSchema, reply.body);
    this.states.set(spec.id, { info, model: spec.model, tokenizer: this.models.get(spec.model)!.tokenizer });
  }

  private state(policyId: PolicyId): PolicyState {
    const s = this.states.get(policyId);
    if (s === undefined) {
      throw new Error(
        `torch engine: no policy "${policyId}" (policies: ${[...this.states.keys()].join(", ")})`,
      );
    }
    return s;
  }

  tokenizerOf(policyId: PolicyId): Tokenizer {
    return this.state(policyId).tokenizer;
  }

  policies(): readonly PolicyInfo[] {
    return [...this.states.values()].map((s) => s.info);
  }

  async generate(
    requests: readonly EngineGenerateRequest[],
    sampling: SamplingParams,
  ): Promise<Completion[]> {
    const params = SamplingParamsSchema.parse(sampling);
    // One worker call (one batched forward loop) per policy: for LoRA policies, one per adapter.
    return generateByPolicy(
      requests,
      (policyId) => this.state(policyId),
      (policyId, own) => this.generateFor(policyId, own, params),
    );
  }

  /** One worker `generate` call for one policy's requests; completions in request order. */
  private async generateFor(
    policyId: PolicyId,
    own: readonly EngineGenerateRequest[],
    params: SamplingParams,
  ): Promise<Completion[]> {
    const { tokenizer, model } = this.state(policyId);
    const prompts = own.map((r) => tokenizer.encodeChat(r.observation.messages));
    const stopIds = [
      ...new Set([...params.stopTokenIds, ...tokenizer.stopTokenIds, ...this.models.get(model)!.eosTokenIds]),
    ];
    const reply = await this.worker.request(
      "generate",
      {
        policy: policyId,
        seeds: own.map((r) => r.seed),
        sampling: {
          temperature: params.temperature,
          topP: params.topP,
          topK: params.topK,
          maxTokens: params.maxTokens,
          stopTokenIds: stopIds,
          // ids past the tokenizer (padding rows of the embedding) are never sampled
          usableVocab: tokenizer.vocabSize,
        },
      },
      new Map<string, PayloadValue>([
        ["prompt_tokens", int32(prompts.flat(), "prompt_tokens")],
        [
          "prompt_lengths",
          int32(
            prompts.map((p) => p.length),
            "prompt_lengths",
          ),
        ],
      ]),
    );
    const { finishReasons } = parseResult("generate", GenerateResultSchema, reply.body);
    const tokens = payload(reply, "tokens", Int32Array);
    const lengths = payload(reply, "lengths", Int32Array);
    const logprobs = payload(reply, "logprobs", Float32Array);
    let at = 0;
    return own.map((_, k) => {
      const n = lengths[k]!;
      const ids = Array.from(tokens.subarray(at, at + n));
      const lps = Array.from(logprobs.subarray(at, at + n));
      at += n;
      return this.completion(tokenizer, prompts[k]!, ids, lps, finishReasons[k]!, stopIds, params);
    });
  }

  /**
   * Text of a completion: the trailing stop token is not part of it; stop strings cut it (and the
   * tokens to the shortest prefix whose text reaches the stop string, as vLLM does).
   */
  private completion(
    tokenizer: Tokenizer,
    promptTokenIds: number[],
    ids: number[],
    lps: number[],
    finish: "stop" | "length",
    stopIds: readonly number[],
    params: SamplingParams,
  ): Completion {
    const last = ids[ids.length - 1];
    const textIds =
      finish === "stop" && last !== undefined && stopIds.includes(last) ? ids.slice(0, -1) : ids;
    let text = tokenizer.decode(textIds);
    const cut = firstStop(text, params.stop);
    if (cut >= 0) {
      let keep = textIds.length;
      for (let n = 1; n <= textIds.length; n++) {
        if (firstStop(tokenizer.decode(textIds.slice(0, n)), params.stop) >= 0) {
          keep = n;
          break;
        }
      }
      text = text.slice(0, cut);
      return {
        text,
        promptTokenIds,
        tokenIds: ids.slice(0, keep),
        logprobs: lps.slice(0, keep),
        finishReason: "stop",
      };
    }
    return { text, promptTokenIds, tokenIds: ids, logprobs: lps, finishReason: finish };
  }

  encode(policyId: PolicyId, observation: Observation, completion?: string): TokenSequence {
    return encodeSequence(this.state(policyId).tokenizer, observation.messages, completion);
  }

  private sequencePayloads(sequences: readonly TokenSequence[]): Map<string, PayloadValue> {
    sequences.forEach((s, b) => {
      if (s.promptTokenIds.length === 0) throw new Error(`torch engine: sequence ${b}: empty prompt`);
    });
    return new Map<string, PayloadValue>([
      [
        "tokens",
        int32(
          sequences.flatMap((s) => [...s.promptTokenIds, ...s.completionTokenIds]),
          "tokens",
        ),
      ],
      [
        "prompt_lengths",
        int32(
          sequences.map((s) => s.promptTokenIds.length),
          "prompt_lengths",
        ),
      ],
      [
        "completion_lengths",
        int32(
          sequences.map((s) => s.completionTokenIds.length),
          "completion_lengths",
        ),
      ],
    ]);
  }

  async logprobs(policyId: PolicyId, sequences: readonly TokenSequence[]): Promise<number[][]> {
    const { tokenizer } = this.state(policyId);
    if (sequences.length === 0) return [];
    const reply = await this.worker.request(
      "logprobs",
      // Scored over the tokenizer's ids only: the distribution generate() samples from.
      {
        policy: policyId,
        usableVocab: tokenizer.vocabSize,
        ...(this.maxTokensPerMicroBatch === undefined
          ? {}
          : { maxTokensPerMicroBatch: this.maxTokensPerMicroBatch }),
      },
      this.sequencePayloads(sequences),
    );
    const flat = payload(reply, "logprobs", Float32Array);
    let at = 0;
    return sequences.map((s) => {
      const row = Array.from(flat.subarray(at, at + s.completionTokenIds.length));
      at += s.completionTokenIds.length;
      return row;
    });
  }

  async trainStep(
    policyId: PolicyId,
    batch: readonly TrainSequence[],
    config: TrainStepConfig,
  ): Promise<TrainMetrics> {
    const state = this.state(policyId);
    batch.forEach((s, b) => {
      if (s.oldLogprobs.length !== s.completionTokenIds.length) {
        throw new Error(
          `torch engine: trainStep: sequence ${b}: oldLogprobs has ${s.oldLogprobs.length} values, the completion ${s.completionTokenIds.length} tokens`,
        );
      }
      if (s.refLogprobs !== undefined && s.refLogprobs.length !== s.completionTokenIds.length) {
        throw new Error(
          `torch engine: trainStep: sequence ${b}: refLogprobs has ${s.refLogprobs.length} values, the completion ${s.completionTokenIds.length} tokens`,
        );
      }
    });
    const withRef = batch.some((s) => s.refLogprobs !== undefined);
    if (withRef && batch.some((s) => s.refLogprobs === undefined)) {
      throw new Error("torch engine: trainStep: refLogprobs must be given for every sequence or none");
    }
    const payloads = this.sequencePayloads(batch);
    payloads.set("old_logprobs", Float32Array.from(batch.flatMap((s) => s.oldLogprobs)));
    payloads.set("advantages", Float32Array.from(batch.map((s) => s.advantage)));
    if (withRef) payloads.set("ref_logprobs", Float32Array.from(batch.flatMap((s) => s.refLogprobs!)));
    const reply = await this.worker.request(
      "train_step",
      {
        policy: policyId,
        loss: config.loss,
        optimizer: config.optimizer,
        microBatchSize: config.microBatchSize,
        ...(config.maxTokensPerMicroBatch === undefined
          ? {}
          : { maxTokensPerMicroBatch: config.maxTokensPerMicroBatch }),
        usableVocab: state.tokenizer.vocabSize,
      },
      payloads,
    );
    const metrics = parseResult("train_step", TrainMetricsSchema, reply.body);
    state.info = { ...state.info, optimizerStep: metrics.optimizerStep };
    return metrics;
  }

  /**
   * The policy's checkpoint, written by the worker into `dir` (a folder on the worker's machine;
   * under FSDP every rank writes its torch.distributed.checkpoint shards there, so it must be shared
   * by the nodes). Returns the relative file names; nothing but names crosses the pipe.
   */
  async saveTo(policyId: PolicyId, dir: string): Promise<string[]> {
    this.state(policyId);
    const reply = await this.worker.request("save", { policy: policyId, dir });
    return parseResult("save", FilesResultSchema, reply.body).files;
  }

  /** save(): the checkpoint staged in a scratch folder, read back as files. */
  async save(policyId: PolicyId): Promise<CheckpointFiles> {
    return this.staged((dir) => this.saveTo(policyId, dir).then((names) => readFolder(dir, names)));
  }

  /** Loads a checkpoint folder on the worker's machine (what saveTo wrote, or a store download). */
  async loadFrom(policyId: PolicyId, dir: string): Promise<void> {
    const state = this.state(policyId);
    const reply = await this.worker.request("load", { policy: policyId, dir });
    state.info = parseResult("load", PolicyInfoSchema, reply.body);
  }

  async load(policyId: PolicyId, files: CheckpointFiles): Promise<void> {
    this.state(policyId);
    await this.staged(async (dir) => {
      writeFolder(dir, files);
      await this.loadFrom(policyId, dir);
    });
  }

  /**
   * The policy as a plain HF model — LoRA merged into its base — written into `dir`: config.json,
   * model.safetensors (F32 or BF16), tokenizer files; what AutoModelForCausalLM.from_pretrained, the
   * embedded engine and inference servers load.
   */
  async exportTo(policyId: PolicyId, dir: string, dtype: "F32" | "BF16" = "F32"): Promise<string[]> {
    this.state(policyId);
    const reply = await this.worker.request("export", { policy: policyId, dtype, dir });
    return parseResult("export", FilesResultSchema, reply.body).files;
  }

  async exportPolicy(policyId: PolicyId, dtype: "F32" | "BF16" = "F32"): Promise<CheckpointFiles> {
    return this.staged((dir) => this.exportTo(policyId, dir, dtype).then((names) => readFolder(dir, names)));
  }

  /** Runs `work` with a fresh scratch folder, removed afterwards whatever happens. */
  private async staged<T>(work: (dir: string) => Promise<T>): Promise<T> {
    const dir = mkdtempSync(join(this.scratchDir, "troupe-ckpt-"));
    try {
      return await work(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  async close(): Promise<void> {
    await this.worker.close();
  }

  /** For tests: the worker dies as a crash would (exit code `code`). */
  crashWorkerForTest(code = 7): Promise<Frame> {
    return this.worker.request("crash", { code });
  }
}
