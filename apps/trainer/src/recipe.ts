/**
 * Recipes: everything a run needs, in one YAML file validated by zod before any work starts.
 * `--set path.to.key=value` overrides any field; a bad key or value fails naming the key and, for
 * enumerations, the allowed values.
 */
import { ByteSizeSchema, SamplingOverridesSchema, SamplingParamsSchema } from "@troupe/core";
import { defaultOptimizerConfig, defaultPolicyLossConfig } from "@troupe/engine";
import { BaselineSchema, EnvironmentOptionsError, environmentOptions, FileRefSchema } from "@troupe/envs";
import { EstimationConfigSchema, StrategyConfigSchema } from "@troupe/rl";
import { parse as parseYaml } from "yaml";
import { z } from "zod";

/** A tiny Qwen-style model built from scratch (HF config.json field names). */
export const ModelSchema = z.strictObject({
  /** Load from a checkpoint folder/URI instead of building from scratch. */
  from: z.string().optional(),
  hidden_size: z.number().int().min(8).default(128),
  intermediate_size: z.number().int().min(8).default(384),
  num_hidden_layers: z.number().int().min(1).default(2),
  num_attention_heads: z.number().int().min(1).default(4),
  num_key_value_heads: z.number().int().min(1).default(2),
  max_position_embeddings: z.number().int().min(16).default(1024),
  tie_word_embeddings: z.boolean().default(true),
  model_type: z.enum(["qwen2", "qwen3"]).default("qwen3"),
});
export type ModelRecipe = z.infer<typeof ModelSchema>;

export const LossSchema = z.strictObject({
  clipLow: z.number().min(0).max(1).default(defaultPolicyLossConfig.clipLow),
  clipHigh: z.number().min(0).default(defaultPolicyLossConfig.clipHigh),
  dualClip: z.number().gt(1).optional(),
  /** β of the k3 KL penalty to the warm start (the reference policy, see reference.ts); 0 = off. */
  klCoef: z.number().min(0).default(defaultPolicyLossConfig.klCoef),
  entropyCoef: z.number().min(0).default(defaultPolicyLossConfig.entropyCoef),
  aggregation: z
    .enum(["token-mean", "sequence-mean", "sequence-sum"])
    .default(defaultPolicyLossConfig.aggregation),
});

export const OptimizerSchema = z.strictObject({
  lr: z.number().gt(0).default(1e-3),
  beta1: z.number().min(0).lt(1).default(defaultOptimizerConfig.beta1),
  beta2: z.number().min(0).lt(1).default(defaultOptimizerConfig.beta2),
  eps: z.number().gt(0).default(defaultOptimizerConfig.eps),
  weightDecay: z.number().min(0).default(defaultOptimizerConfig.weightDecay),
  maxGradNorm: z.number().min(0).default(defaultOptimizerConfig.maxGradNorm),
  warmupSteps: z.number().int().min(0).default(0),
  schedule: z.enum(["constant", "cosine", "linear"]).default("constant"),
  minLrRatio: z.number().min(0).max(1).default(0),
});

/** Which engine computes the policies (docs/gpu.md). `kind` defaults to the embedded CPU engine. */
const OnnxEngineSchema = z.strictObject({
  kind: z.literal("onnx"),
  /**
   * ORT's CPU arenas unbounded (default false: bounded). Runs allocate from memory their session
   * keeps instead of fresh pages (≈ 1.2–1.6× faster training and prefill); by default the engine
   * keeps the arenas and the running graph within one run's budget together, releasing idle
   * arenas for room. With it each arena keeps what its largest run took, so the budget is shared
   * out between them (engines.ts, onnxMemoryPlan) and long sequences may no longer fit one share.
   * Optional: run ids stay.
   */
  memoryArena: z.boolean().optional(),
  /**
   * Score and train with the last layer's queries, MLP and output head on the columns that predict
   * completion tokens only, the sequences left-padded (default false). The same math, rounded
   * differently: a 2-layer training step on the games' prompts takes ≈ 0.66 of the time
   * (docs/training.md, "Speed"). It changes results at float precision, so it is part of the warm
   * start's cache key when on.
   */
  completionWindow: z.boolean().optional(),
});

/**
 * Rollouts on OpenAI-compatible servers (vLLM, SGLang) paired with the torch learner
 * (@troupe/engine-openai's paired engine): generation goes to the servers, the learner trains, and
 * after each update the new weights reach the servers through `syncDir` (docs/gpu.md).
 */
const RolloutServersSchema = z.strictObject({
  kind: z.literal("openai"),
  /** Server roots, e.g. http://10.0.0.5:8000; requests go to the least-loaded one. */
  baseUrls: z.array(z.url()).min(1),
  /** Sent as `Authorization: Bearer …` (vLLM/SGLang --api-key). */
  apiKey: z.string().min(1).optional(),
  /**
   * `lora`: each update's adapters are loaded through /v1/load_lora_adapter as `<policy>-v<step>`
   * (needs engine.lora); `full`: the merged model is exported and every server POSTs `reloadPath`.
   */
  weightSync: z.enum(["lora", "full"]).default("lora"),
  /** `full`: the route that loads a model folder, body {"model_path": …} (SGLang: /update_weights_from_disk). */
  reloadPath: z.string().regex(/^\//, "expected a route starting with /").optional(),
  /** A folder the learner writes each update's weights into and the servers read (same path on both). */
  syncDir: z.string().min(1),
  /** `full`: the model name the servers serve (vLLM --served-model-name; default: model.from as given). */
  servedModel: z.string().min(1).optional(),
  /** `full`: dtype of the exported model. */
  exportDtype: z.enum(["bfloat16", "float32"]).default("bfloat16"),
  /** Requests in flight per server. */
  concurrency: z.number().int().min(1).default(64),
  /** Limit of one request attempt; a timed-out attempt is retried. */
  timeoutSeconds: z.number().gt(0).default(600),
  /** Retries after the first attempt, on 429, 5xx, timeouts and network errors. */
  retries: z.number().int().min(0).default(4),
});
export type RolloutServersRecipe = z.infer<typeof RolloutServersSchema>;

/** The PyTorch worker (@troupe/engine-torch): real Qwen models on GPUs, or tiny ones on a CPU. */
const TorchEngineSchema = z.strictObject({
  kind: z.literal("torch"),
  /** Python with torch and troupe_worker; relative paths are from the workspace root (default: $TROUPE_PYTHON or /usr/bin/python3). */
  python: z.string().min(1).optional(),
  /** `auto`: cuda when the worker sees a GPU (under torchrun: each rank its local GPU), else cpu. */
  device: z
    .string()
    .regex(/^(auto|cpu|cuda(:\d+)?)$/, 'expected "auto", "cpu", "cuda" or "cuda:N"')
    .default("auto"),
  /** Weights on the device: float32 master weights (+ bf16 autocast on CUDA) or bfloat16 (half the memory). */
  dtype: z.enum(["float32", "bfloat16"]).default("float32"),
  /** bf16 autocast of forward passes on CUDA with float32 weights. */
  autocast: z.boolean().default(true),
  gradientCheckpointing: z.boolean().default(false),
  /** `auto`: transformers' generate for transformers models, else the worker's own loop. */
  generator: z.enum(["auto", "torch", "hf"]).default("auto"),
  /** Chat-template arguments, as transformers' apply_chat_template takes them (e.g. {enable_thinking: false} for Qwen3). */
  chatTemplateKwargs: z.record(z.string(), z.unknown()).default({}),
  /** `auto`: transformers when importable, else the worker's own Qwen (troupe_worker/qwen.py). */
  modelBackend: z.enum(["auto", "transformers", "troupe"]).default("auto"),
  /** torch CPU threads (0: torch's default). */
  threads: z.number().int().min(0).default(0),
  /** Every policy of the team is a LoRA adapter on one frozen, shared base (per-role adapters); null: full models. */
  lora: z
    .strictObject({
      r: z.number().int().min(1).default(16),
      /** α: the update is scaled by α/r (default 2r). */
      alpha: z.number().gt(0).optional(),
      /** Last names of the Linear modules that get adapters (default: every attention and MLP projection). */
      targetModules: z.array(z.string().min(1)).min(1).optional(),
    })
    .nullish(),
  /** Heterogeneous teams: a policy id → its own local HF folder (and tokenizer); the others use model.from. */
  policyModels: z.record(z.string().min(1), z.string().min(1)).default({}),
  /** One worker process, or torchrun for several GPUs / boxes (FSDP). */
  launch: z
    .discriminatedUnion("kind", [
      z.strictObject({ kind: z.literal("process") }),
      z.strictObject({
        kind: z.literal("torchrun"),
        nprocPerNode: z.number().int().min(1),
        nnodes: z.number().int().min(1).default(1),
        /** host:port of the c10d rendezvous on node 0 (required when nnodes > 1). */
        rdzvEndpoint: z.string().min(1).optional(),
        torchrun: z.string().min(1).default("torchrun"),
      }),
    ])
    .default({ kind: "process" }),
  /** Extra `python -m troupe_worker` flags, e.g. ["--logprob-batch-size", "4"]. */
  workerArgs: z.array(z.string()).default([]),
  /** Seconds the worker may take to import torch, load the models and answer. */
  startupTimeoutSeconds: z.number().gt(0).default(600),
  /** Rollouts on OpenAI-compatible servers; this worker is then the learner only. */
  rollout: RolloutServersSchema.optional(),
});

/** A remote OpenAI-compatible server alone generates but cannot train: see engine.rollout of torch. */
const OpenaiEngineSchema = z.strictObject({ kind: z.literal("openai") });

export const EngineSchema = z
  .preprocess(
    // `engine: {}` (or no kind) keeps meaning the embedded engine.
    (value) =>
      typeof value === "object" && value !== null && !Array.isArray(value) && !("kind" in value)
        ? { ...value, kind: "onnx" }
        : value,
    z.discriminatedUnion("kind", [OnnxEngineSchema, TorchEngineSchema, OpenaiEngineSchema]),
  )
  .default({ kind: "onnx" });
export type TorchEngineRecipe = z.infer<typeof TorchEngineSchema>;

/**
 * The environment: a registry name and its options, checked against that environment's own options
 * schema (an option of another environment is refused naming the key). Options are kept as written:
 * the registry fills in the defaults, so a recipe's hash does not move when a default is added.
 */
const EnvironmentSchema = z
  .strictObject({
    /** A built-in environment's name; for `module`, the name its entry registered under (filled in when it loads). */
    name: z.string().min(1),
    /**
     * An environment of one's own: a TypeScript or JavaScript file exporting an environment entry,
     * relative to the recipe; a run records it as {path, sha256} (recipe-files.ts loads it).
     */
    module: FileRefSchema.optional(),
    /** Environment-specific options (grid size, roles protocol, datasets…); docs/environments.md lists them. */
    options: z.record(z.string(), z.unknown()).default({}),
    /** Run the agents' code with rlimits only when bubblewrap cannot run here: NOT a security boundary. */
    unsafe: z.boolean().optional(),
    /** Answer the team's task a paper baseline's way (single, naive-concat, sequential, discussion). */
    baseline: BaselineSchema.optional(),
  })
  .superRefine((environment, ctx) => {
    try {
      environmentOptions(environment.name, environment.options);
    } catch (error) {
      if (!(error instanceof EnvironmentOptionsError)) throw error;
      ctx.addIssue({
        code: "custom",
        path: error.key.split(".").slice(1),
        message: error.message.slice(error.key.length + 2),
      });
    }
  });

/**
 * The warm start (warm-start.ts): supervised steps on the environment's solver demonstrations
 * before RL. Which of these fields change what it learns is warm-start-cache.ts's key.
 */
export const SftSchema = z.strictObject({
  steps: z.number().int().min(0).default(0),
  batchSize: z.number().int().min(1).default(32),
  lr: z.number().gt(0).default(3e-3),
  /** Probability that a demonstration turn is replaced by a mistake, so the team learns to recover. */
  mistakeRate: z.number().min(0).max(1).default(0.3),
  /** The roles whose demonstration turns may slip; all roles when absent. */
  mistakeRoles: z.array(z.string().min(1)).min(1).optional(),
  /**
   * Environment options that replace the recipe's for the demonstrations only (e.g. shorter
   * mazes: a warm start on easy tasks, RL on all of them); none when absent.
   */
  environmentOptions: z.record(z.string(), z.unknown()).optional(),
  /**
   * An imperfect demonstrator, whose mistake is taught (unlike the slips above, which are only
   * executed): with probability `rate` a demonstration's target is cut to its first `length`
   * characters, e.g. a plan of its first two moves, and the cut text is what the environment
   * runs. The warm start then does what the demonstrator mostly did, while the full answer
   * stays in its distribution for RL to find (pass@K > pass@1). `roles`: the roles whose
   * demonstrations are cut; all roles when absent. No cut when the section is absent.
   */
  cut: z
    .strictObject({
      rate: z.number().min(0).max(1),
      length: z.number().int().min(1),
      roles: z.array(z.string().min(1)).min(1).optional(),
    })
    .optional(),
  /**
   * The warm start's learning-rate schedule over its own steps (warm-start.ts, warmStartLr):
   * constant; cosine or linear decay to minLrRatio·lr; or wsd, constant and then a linear decay
   * over the last decayFraction of the steps.
   */
  schedule: z.enum(["constant", "cosine", "linear", "wsd"]).default("constant"),
  /**
   * Linear warm-up over the warm start's first steps, on top of the schedule: step s of the
   * first W runs at (s + 1)/W of the scheduled rate (0: none).
   */
  warmupSteps: z.number().int().min(0).default(0),
  /** r: the cosine, linear and wsd decays end at r·lr. */
  minLrRatio: z.number().min(0).max(1).default(0.1),
  /** f: wsd decays over the last f of the steps. */
  decayFraction: z.number().gt(0).max(1).default(0.2),
  /**
   * A warm start that stops when it is good enough: after the step where every policy's mean
   * negative log-likelihood over its last SFT_STOP_WINDOW steps is at or below this, instead of
   * at `steps` (then a maximum). The schedule still counts over `steps`. One number for every
   * policy, or one per role (`{ tool: 0.05, plan: 0.2 }`): a role whose demonstrations keep some
   * entropy (cut ones: stop here or go on) never gets as low as one that copies. Roles that share
   * a policy share its NLL, so they must be given one value. Absent: all `steps` are run.
   */
  stopAtNll: z.union([z.number().gt(0), z.record(z.string().min(1), z.number().gt(0))]).optional(),
});
export type SftRecipe = z.output<typeof SftSchema>;

/** The sft fields that were optional before they had these defaults (when absent, these values applied). */
const SFT_LATER_DEFAULTS = {
  schedule: "constant",
  warmupSteps: 0,
  minLrRatio: 0.1,
  decayFraction: 0.2,
} as const;

/**
 * An sft section as parsed before SFT_LATER_DEFAULTS were defaults: those fields left out where
 * they hold their default. What was hashed before (a sweep point's recipe, the warm start's
 * version-1 cache key) is found again through it.
 */
export function sftBeforeLaterDefaults(sft: SftRecipe): Partial<SftRecipe> {
  const out: Partial<SftRecipe> = { ...sft };
  for (const [field, value] of Object.entries(SFT_LATER_DEFAULTS) as [
    keyof typeof SFT_LATER_DEFAULTS,
    unknown,
  ][])
    if (out[field] === value) delete out[field];
  return out;
}

export const RecipeSchema = z.strictObject({
  name: z.string().min(1),
  seed: z.number().int().min(0).default(0),
  /** Where runs live (runs/<id>/ in it): file://folder (default .troupe) or s3://bucket/prefix. */
  store: z.string().default("file://./.troupe"),
  environment: EnvironmentSchema,
  team: z
    .strictObject({
      /** `shared`: one policy for every role; `per-role`: one policy per role. */
      specialisation: z.enum(["shared", "per-role"]).default("per-role"),
      maxTurns: z.number().int().min(1).optional(),
      turnOrder: z.enum(["sequential", "parallel"]).optional(),
    })
    .default({ specialisation: "per-role" }),
  engine: EngineSchema,
  model: ModelSchema.prefault({}),
  /** The rollout strategy (`name`) and its config, declared with its defaults in @troupe/rl. */
  strategy: StrategyConfigSchema,
  /**
   * The advantage stage after every step's rollouts, the same for every strategy (@troupe/rl
   * estimators.ts): the baseline and std normalisation (GRPO's defaults: mean, normalised) and the
   * group filters.
   */
  advantage: EstimationConfigSchema.prefault({}),
  /** How every agent samples; `roles` gives a role its own (evaluation and serving included). */
  sampling: SamplingParamsSchema.partial()
    .extend({
      /** Role id → the fields it samples with instead of the ones above, and its evaluation temperature. */
      roles: z
        .record(
          z.string().min(1),
          SamplingOverridesSchema.extend({
            /** This role's temperature at held-out evaluation (default `train.evalTemperature`). */
            evalTemperature: z.number().min(0).optional(),
          }),
        )
        .optional(),
    })
    .default({}),
  loss: LossSchema.prefault({}),
  optimizer: OptimizerSchema.prefault({}),
  train: z
    .strictObject({
      steps: z.number().int().min(0).default(50),
      tasksPerStep: z.number().int().min(1).default(8),
      microBatchSize: z.number().int().min(1).default(16),
      /**
       * Padded tokens (sequences × the longest) per forward/backward, a second bound on each
       * micro-batch besides microBatchSize (verl's ppo_max_token_len_per_gpu). Optional: the
       * embedded engine cuts by `memoryBudget` anyway; set it for the torch engine's GPU memory.
       */
      maxTokensPerMicroBatch: z.number().int().min(1).optional(),
      /**
       * PPO epochs: optimizer updates per step over the same samples (PPO's K epochs; CleanRL's
       * `update_epochs`). Epoch 1 is on-policy (ratio 1); later epochs are kept near the sampling
       * policy by the clipped ratio. More epochs learn more per rollout, which is the costly part.
       */
      epochs: z.number().int().min(1).max(32).default(1),
      /** Evaluate every this many steps (0: only at start and end). */
      evalEvery: z.number().int().min(0).default(10),
      evalTasks: z.number().int().min(1).default(64),
      /** Sampling temperature at evaluation (0 = greedy). */
      evalTemperature: z.number().min(0).default(0),
      checkpointEvery: z.number().int().min(1).default(10),
    })
    .prefault({}),
  sft: SftSchema.optional(),
  /**
   * Peak resident memory of the whole training process (`2GiB`, `512MiB` or bytes; default
   * DEFAULT_MEMORY_BUDGET). The embedded engine cuts every training, scoring and generation run
   * into micro-batches whose estimated peak fits what is left after the runtime and the weights;
   * a recipe whose longest sequence cannot fit alone stops before step 0 with one error line.
   * (Optional, so recipes without it parse and hash as before.)
   */
  memoryBudget: ByteSizeSchema.optional(),
  mode: z.enum(["all", "rollout", "learner"]).default("all"),
  /** Learner: the oldest policy version a rollout shard may come from (0 = strictly on-policy). */
  maxStaleness: z.number().int().min(0).default(0),
  /** Where metrics go besides metrics.jsonl. Optional, so recipes without it parse (and hash) as before. */
  logging: z
    .strictObject({
      /** TensorBoard event files in runs/<id>/tensorboard/ (tensorboard --logdir reads them). */
      tensorboard: z.boolean().default(false),
    })
    .optional(),
});
export type Recipe = z.infer<typeof RecipeSchema>;

/** `memoryBudget` when a recipe gives none: room for a test suite or a second run beside it. */
export const DEFAULT_MEMORY_BUDGET = 2 * 2 ** 30;
/** The warm start's imperfect demonstrator (`sft.cut`; sft.ts). */
export type DemonstrationCut = NonNullable<SftRecipe["cut"]>;

export class RecipeError extends Error {
  override readonly name = "RecipeError";
}

/** Parses a value given on the command line: numbers, booleans, null, JSON arrays/objects, else a string. */
export function parseOverrideValue(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === "") return "";
  try {
    return parseYaml(trimmed) as unknown;
  } catch {
    return trimmed;
  }
}

/** Applies `a.b.c=value` overrides to a plain recipe object (before validation). */
export function applyOverrides(
  raw: Record<string, unknown>,
  overrides: readonly string[],
): Record<string, unknown> {
  const out = structuredClone(raw);
  for (const assignment of overrides) {
    const eq = assignment.indexOf("=");
    if (eq <= 0) throw new RecipeError(`--set expects key=value, got "${assignment}"`);
    const path = assignment.slice(0, eq).split(".");
    if (path.some((p) => p === "" || p === "__proto__" || p === "constructor" || p === "prototype")) {
      throw new RecipeError(`--set: bad key "${assignment.slice(0, eq)}"`);
    }
    let node: Record<string, unknown> = out;
    for (const key of path.slice(0, -1)) {
      const next = node[key];
      if (next === undefined) node[key] = {};
      else if (typeof next !== "object" || next === null || Array.isArray(next)) {
        throw new RecipeError(`--set ${assignment}: "${key}" is not a section`);
      }
      node = node[key] as Record<string, unknown>;
    }
    node[path.at(-1)!] = parseOverrideValue(assignment.slice(eq + 1));
  }
  return out;
}

/**
 * Runs and recipes written before the advantage stage had a section of its own kept its settings
 * in the strategy (`strategy.advantage`, `strategy.filters`): they move to `advantage`.
 */
export function liftAdvantageSettings(raw: unknown, where = "recipe"): unknown {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return raw;
  const recipe = raw as Record<string, unknown>;
  const strategy = recipe.strategy;
  if (typeof strategy !== "object" || strategy === null || Array.isArray(strategy)) return raw;
  const { advantage, filters, ...rest } = strategy as Record<string, unknown>;
  if (advantage === undefined && filters === undefined) return raw;
  if (recipe.advantage !== undefined) {
    throw new RecipeError(
      `${where}: strategy.${advantage !== undefined ? "advantage" : "filters"} and advantage both given: the advantage stage's settings go in \`advantage\` only`,
    );
  }
  const lifted = { ...(typeof advantage === "object" && advantage !== null ? advantage : {}) };
  return { ...recipe, strategy: rest, advantage: filters === undefined ? lifted : { ...lifted, filters } };
}

/** Validates a recipe object, turning the first zod issue into a message naming the key. */
export function parseRecipe(raw: unknown, where = "recipe"): Recipe {
  const module = (raw as { environment?: { module?: unknown } } | null)?.environment?.module;
  if (typeof module === "string") {
    throw new RecipeError(
      `${where}: environment.module: ${module} is not loaded yet (read recipes with loadRecipeFile, run configs with parseRunConfig)`,
    );
  }
  const parsed = RecipeSchema.safeParse(liftAdvantageSettings(raw, where));
  if (parsed.success) return parsed.data;
  const lines = parsed.error.issues.slice(0, 5).map((issue) => {
    const key = issue.path.join(".") || "(root)";
    if (issue.code === "unrecognized_keys") {
      const prefix = issue.path.length ? `${issue.path.join(".")}.` : "";
      return `${where}: unknown key ${issue.keys.map((k) => `"${prefix}${k}"`).join(", ")}`;
    }
    return `${where}: ${key}: ${issue.message}`;
  });
  throw new RecipeError(lines.join("\n"));
}

export function loadRecipeText(
  yamlText: string,
  overrides: readonly string[] = [],
  where = "recipe",
): Recipe {
  return parseRecipe(recipeObject(yamlText, overrides, where), where);
}

/** A recipe's YAML as a plain object with the `--set` overrides applied (not validated yet). */
export function recipeObject(
  yamlText: string,
  overrides: readonly string[] = [],
  where = "recipe",
): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = parseYaml(yamlText);
  } catch (error) {
    throw new RecipeError(`${where}: not valid YAML: ${(error as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new RecipeError(`${where}: expected a mapping at the top level`);
  }
  return applyOverrides(switchEnvironment(raw as Record<string, unknown>, overrides), overrides);
}

/**
 * `--set environment.name=<another>` starts that environment from its defaults: the file's options
 * belong to the environment it names, so they are dropped (later `--set environment.options.…` apply).
 */
export function switchEnvironment(
  raw: Record<string, unknown>,
  overrides: readonly string[],
): Record<string, unknown> {
  const environment = raw.environment as Record<string, unknown> | undefined;
  const named = overrides
    .filter((o) => o.slice(0, o.indexOf("=")).trim() === "environment.name")
    .map((o) => String(parseOverrideValue(o.slice(o.indexOf("=") + 1))))
    .at(-1);
  if (
    named === undefined ||
    typeof environment !== "object" ||
    environment === null ||
    environment.name === named
  )
    return raw;
  const { module: _module, ...builtIn } = environment;
  return { ...raw, environment: { ...builtIn, options: {} } };
}
