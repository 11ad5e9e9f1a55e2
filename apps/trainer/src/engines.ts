/**
 * Builds the engine a recipe names, with one policy per id the team uses.
 *
 * From scratch, every engine starts a policy from the same weights: `initQwenWeights(config,
 * deriveSeed(recipe.seed, "init", policyId))` with the built-in byte tokenizer. The torch engine
 * receives them as checkpoint files (rather than seeding torch's own initialiser), so a recipe
 * gives bit-identical initial weights whichever engine runs it, and a torch run's checkpoints are
 * the same HF files (safetensors + config.json + tokenizer + optimizer state) the embedded engine
 * loads.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  deriveSeed,
  formatBytes,
  type PolicyId,
  type PolicySet,
  type Team,
  teamPolicies,
} from "@troupe/core";
import {
  ByteTokenizer,
  type Engine,
  encodeCheckpoint,
  enginePolicy,
  initQwenWeights,
  type QwenConfig,
  tinyQwenConfig,
} from "@troupe/engine";
import { createOnnxEngine, ModelRunner, policyFixedBytes } from "@troupe/engine-onnx";
import {
  createTorchEngine,
  type TorchEngine,
  type TorchModelSource,
  type TorchPolicySpec,
  type WorkerProcessOptions,
} from "@troupe/engine-torch";
import { workspaceRoot } from "./app-paths.ts";
import {
  DEFAULT_MEMORY_BUDGET,
  type ModelRecipe,
  type Recipe,
  RecipeError,
  type TorchEngineRecipe,
} from "./recipe.ts";
import { checkServerRollouts, pairWithServers } from "./run/server-rollouts.ts";
import { longestAnswer } from "./sampling.ts";

/**
 * The checks `createEngine` makes before it builds anything (the engine kind, the model's shape,
 * the torch launch and team layout), without building: a run's folder is written only after them.
 */
export function checkEngineRecipe(recipe: Recipe, policyIds: readonly PolicyId[]): void {
  switch (recipe.engine.kind) {
    case "onnx":
      if (recipe.model.from !== undefined) onnxFromError(recipe.model.from);
      checkLongestSequence(recipe, onnxMemoryPlan(recipe, policyIds));
      return;
    case "torch":
      torchProcessOptions(recipe.engine);
      if (recipe.model.from === undefined) scratchConfig(recipe.model);
      torchTeamLayout(
        { ...recipe, model: { ...recipe.model, from: recipe.model.from ?? "." } },
        recipe.engine,
        policyIds,
      );
      if (recipe.engine.rollout !== undefined)
        checkServerRollouts(recipe, recipe.engine, recipe.engine.rollout, policyIds);
      return;
    default:
      unsupportedEngine(recipe.engine.kind);
  }
}

function onnxFromError(from: string): never {
  throw new RecipeError(
    `recipe: model.from: loading "${from}" is done with --resume or trainer:sft checkpoints in the onnx engine; engine.kind "torch" loads HF folders`,
  );
}

function unsupportedEngine(kind: string): never {
  if (kind === "openai") {
    throw new RecipeError(
      'recipe: engine.kind: "openai" generates but cannot train; keep engine.kind "torch" as the learner and put the servers in engine.rollout: { kind: openai, baseUrls: [...], syncDir: ... } (docs/gpu.md)',
    );
  }
  throw new RecipeError(`recipe: engine.kind: "${kind}" cannot train; use "onnx" or "torch"`);
}

export async function createEngine(recipe: Recipe, policyIds: readonly PolicyId[]): Promise<Engine> {
  switch (recipe.engine.kind) {
    case "onnx": {
      if (recipe.model.from !== undefined) onnxFromError(recipe.model.from);
      const memory = onnxMemoryPlan(recipe, policyIds);
      return createOnnxEngine({
        policies: policyIds.map((id) => ({
          id,
          config: scratchConfig(recipe.model),
          seed: deriveSeed(recipe.seed, "init", id),
        })),
        activationBudgetBytes: memory.runBytes,
        memoryArena: recipe.engine.memoryArena === true,
        completionWindow: recipe.engine.completionWindow === true,
      });
    }
    case "torch": {
      const { rollout } = recipe.engine;
      if (rollout !== undefined) checkServerRollouts(recipe, recipe.engine, rollout, policyIds);
      const learner = await createTorchEngineFor(recipe, recipe.engine, policyIds);
      return rollout === undefined
        ? learner
        : pairWithServers(recipe, recipe.engine, rollout, learner, policyIds, workspacePath(rollout.syncDir));
    }
    default:
      unsupportedEngine(recipe.engine.kind);
  }
}

/** The team's policies as the engine serves them, tagged with the weights' version. */
export function policySet(engine: Engine, team: Team, version: number): PolicySet {
  return Object.fromEntries(teamPolicies(team).map((id) => [id, enginePolicy(engine, id, version)]));
}

/**
 * Resident memory of the trainer before any batch: Node, tsx, the loaded modules and ONNX Runtime
 * with its sessions. Measured as the peak RSS of the process group of one-step runs whose graph
 * runs are small (bench/memory.ts: 330–420 MiB on the shipped recipes), with room to spare.
 */
export const RUNTIME_BYTES = 512 * 2 ** 20;

export interface OnnxMemoryPlan {
  /** The recipe's memoryBudget (or the default). */
  readonly budgetBytes: number;
  /** The runtime, and every policy's fixed bytes in each engine that holds it (the KL reference is a second). */
  readonly fixedBytes: number;
  /** What the graph runs may take together: the budget less the fixed part. */
  readonly activationBytes: number;
  /**
   * What one graph run may take: all of `activationBytes` (runs take turns, and the memory ORT's
   * arenas keep between them stays within it together with the running one: the engine releases
   * idle arenas for room), or with `engine.memoryArena` an equal share for each arena that keeps
   * its largest run (train, score and prefill per policy; score per policy in a KL reference
   * engine).
   */
  readonly runBytes: number;
}

/**
 * How the embedded engine spends `memoryBudget`: the runtime, each policy's fixed bytes (weights,
 * gradients, AdamW moments, the decode step's copies; twice with a KL reference engine), and what
 * is left for one graph run at a time. A budget the fixed part already fills is a RecipeError.
 */
export function onnxMemoryPlan(recipe: Recipe, policyIds: readonly PolicyId[]): OnnxMemoryPlan {
  const budgetBytes = recipe.memoryBudget ?? DEFAULT_MEMORY_BUDGET;
  const engines = recipe.loss.klCoef > 0 ? 2 : 1;
  const weightsBytes = engines * policyIds.length * policyFixedBytes(scratchConfig(recipe.model));
  const fixedBytes = RUNTIME_BYTES + weightsBytes;
  const activationBytes = budgetBytes - fixedBytes;
  if (activationBytes <= 0) {
    throw new RecipeError(
      `recipe: memoryBudget ${formatBytes(budgetBytes)} is less than the trainer holds before any batch ` +
        `(${formatBytes(fixedBytes)}: runtime ${formatBytes(RUNTIME_BYTES)}, weights and optimizer state ` +
        `${formatBytes(weightsBytes)}); raise memoryBudget`,
    );
  }
  const policies = policyIds.length;
  const arenas =
    recipe.engine.kind === "onnx" && recipe.engine.memoryArena === true
      ? 3 * policies + (engines - 1) * policies
      : 1;
  return { budgetBytes, fixedBytes, activationBytes, runBytes: activationBytes / arenas };
}

/**
 * Before step 0: one sequence as long as the model takes (model.max_position_embeddings, prompt and
 * answer together) must fit one graph run of each kind, or the run stops here with one line
 * instead of meeting the budget (or the OOM killer) mid-run.
 */
function checkLongestSequence(recipe: Recipe, memory: OnnxMemoryPlan): void {
  const tokens = recipe.model.max_position_embeddings;
  const maxTokens = Math.min(longestAnswer(recipe), tokens - 1);
  // The estimates read the graphs only: no session, no weights.
  const config = scratchConfig(recipe.model);
  const runner = new ModelRunner(config, "float32", "memory check", {
    vocab: Math.min(new ByteTokenizer().vocabSize, config.vocab_size),
  });
  const bytes = runner.memory.sequenceBytes(tokens, maxTokens);
  const [kind, needed] = Object.entries(bytes).reduce((a, b) => (b[1] > a[1] ? b : a));
  if (needed <= memory.runBytes) return;
  throw new RecipeError(
    `recipe: memoryBudget ${formatBytes(memory.budgetBytes)} is too small: one sequence of ${tokens} tokens ` +
      `(model.max_position_embeddings) needs an estimated ${formatBytes(needed)} to ${kind}, ` +
      `and the budget leaves ${formatBytes(memory.runBytes)} for one run after the runtime and weights ` +
      `(${formatBytes(memory.fixedBytes)}); raise memoryBudget to at least ` +
      `${formatBytes(memory.fixedBytes + needed)} or lower model.max_position_embeddings`,
  );
}

/** The recipe's tiny from-scratch model as a full QwenConfig (HF names). */
export function scratchConfig(model: ModelRecipe): QwenConfig {
  const { from: _from, ...fields } = model;
  const headDim = fields.hidden_size / fields.num_attention_heads;
  if (!Number.isInteger(headDim)) {
    throw new RecipeError(
      `recipe: model.hidden_size (${fields.hidden_size}) must be divisible by model.num_attention_heads (${fields.num_attention_heads})`,
    );
  }
  return tinyQwenConfig({ ...fields, head_dim: headDim });
}

/** The initial weights of a from-scratch policy, as checkpoint files (what both engines start from). */
export function scratchCheckpoint(recipe: Recipe, seedName: string) {
  const config = scratchConfig(recipe.model);
  return encodeCheckpoint({
    config,
    weights: initQwenWeights(config, deriveSeed(recipe.seed, "init", seedName)),
    tokenizer: new ByteTokenizer(),
  });
}

/** Relative paths in a recipe (python, model folders) are relative to the workspace root, like stores. */
function workspacePath(path: string): string {
  const plain = path.startsWith("file://") ? fileURLToPath(path) : path;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(plain)) {
    throw new RecipeError(
      `recipe: "${path}": the torch engine reads models from local folders (download it first, e.g. huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct --local-dir /models/Qwen2.5-0.5B-Instruct)`,
    );
  }
  return isAbsolute(plain) ? plain : resolve(workspaceRoot, plain);
}

/** `python -m troupe_worker` flags for the recipe's engine section. */
export function torchWorkerArgs(engine: TorchEngineRecipe): string[] {
  const args: string[] = [];
  if (engine.device !== "auto") args.push("--device", engine.device);
  args.push("--param-dtype", engine.dtype);
  if (!engine.autocast) args.push("--no-autocast");
  if (engine.gradientCheckpointing) args.push("--gradient-checkpointing");
  args.push("--generator", engine.generator, "--model-backend", engine.modelBackend);
  if (engine.threads > 0) args.push("--threads", String(engine.threads));
  return [...args, ...engine.workerArgs];
}

/** The troupe_worker Python package: the folder of the @troupe/engine-torch-worker workspace package. */
export const TORCH_WORKER_DIR = dirname(
  createRequire(import.meta.url).resolve("@troupe/engine-torch-worker/package.json"),
);

/** How the controller starts the worker: interpreter, flags, one process or torchrun. */
export function torchProcessOptions(engine: TorchEngineRecipe): WorkerProcessOptions {
  const python = engine.python ?? process.env.TROUPE_PYTHON ?? "/usr/bin/python3";
  if (engine.python === undefined && process.env.TROUPE_PYTHON?.includes("/")) {
    if (!existsSync(workspacePath(process.env.TROUPE_PYTHON)))
      throw new RecipeError(`TROUPE_PYTHON: no file ${process.env.TROUPE_PYTHON}`);
  }
  const { launch } = engine;
  if (launch.kind === "torchrun" && launch.nnodes > 1 && launch.rdzvEndpoint === undefined) {
    throw new RecipeError(
      "recipe: engine.launch.rdzvEndpoint: required when engine.launch.nnodes > 1 (host:port on node 0)",
    );
  }
  return {
    python: python.includes("/") ? workspacePath(python) : python,
    workerDir: TORCH_WORKER_DIR,
    workerArgs: torchWorkerArgs(engine),
    startupTimeoutMs: engine.startupTimeoutSeconds * 1000,
    launch:
      launch.kind === "torchrun"
        ? {
            kind: "torchrun",
            nprocPerNode: launch.nprocPerNode,
            nnodes: launch.nnodes,
            torchrun: launch.torchrun.includes("/") ? workspacePath(launch.torchrun) : launch.torchrun,
            ...(launch.rdzvEndpoint !== undefined ? { rdzvEndpoint: launch.rdzvEndpoint } : {}),
          }
        : { kind: "process" },
  };
}

/**
 * The models and policies of a torch team:
 * - `engine.lora`: one base (model.from, or from scratch seeded with the name "base") and one
 *   LoRA adapter per policy — per-role adapters, saved and loaded separately;
 * - otherwise one full trainable model per policy: its `engine.policyModels` folder, else
 *   model.from (one copy per policy), else from scratch with the onnx engine's seeds.
 */
export function torchTeamLayout(
  recipe: Recipe,
  engine: TorchEngineRecipe,
  policyIds: readonly PolicyId[],
): { models: Record<string, TorchModelSource>; policies: TorchPolicySpec[] } {
  for (const id of Object.keys(engine.policyModels)) {
    if (!policyIds.includes(id)) {
      throw new RecipeError(
        `recipe: engine.policyModels.${id}: the team has no policy "${id}" (policies: ${policyIds.join(", ")})`,
      );
    }
  }
  const gradientCheckpointing = engine.gradientCheckpointing;
  const fromRecipe = (seedName: string): TorchModelSource =>
    recipe.model.from !== undefined
      ? { kind: "path", path: workspacePath(recipe.model.from), gradientCheckpointing }
      : { kind: "files", files: scratchCheckpoint(recipe, seedName), gradientCheckpointing };
  if (engine.lora) {
    if (Object.keys(engine.policyModels).length > 0) {
      throw new RecipeError(
        "recipe: engine.policyModels: LoRA policies share one base (model.from); drop engine.lora for per-policy models",
      );
    }
    const { r, alpha, targetModules } = engine.lora;
    return {
      models: { base: fromRecipe("base") },
      policies: policyIds.map((id) => ({
        id,
        model: "base",
        lora: { r, ...(alpha !== undefined ? { alpha } : {}), ...(targetModules ? { targetModules } : {}) },
        seed: deriveSeed(recipe.seed, "init", id),
      })),
    };
  }
  const models: Record<string, TorchModelSource> = {};
  const policies = policyIds.map((id) => {
    const own = engine.policyModels[id];
    if (own !== undefined) {
      const path = workspacePath(own);
      const key = `path:${path}`;
      models[key] ??= { kind: "path", path, gradientCheckpointing };
      return { id, model: key };
    }
    if (recipe.model.from !== undefined) {
      models.base ??= fromRecipe("base");
      return { id, model: "base" };
    }
    models[`init:${id}`] = fromRecipe(id);
    return { id, model: `init:${id}` };
  });
  return { models, policies };
}

async function createTorchEngineFor(
  recipe: Recipe,
  engine: TorchEngineRecipe,
  policyIds: readonly PolicyId[],
): Promise<TorchEngine> {
  return createTorchEngine({
    ...torchProcessOptions(engine),
    ...torchTeamLayout(recipe, engine, policyIds),
    chatTemplateKwargs: engine.chatTemplateKwargs,
    maxTokensPerMicroBatch: recipe.train.maxTokensPerMicroBatch,
  });
}
