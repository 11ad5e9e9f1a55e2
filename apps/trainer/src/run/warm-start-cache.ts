/**
 * Where a recipe's warm start is kept — a run of its own, named by the hash of its cache key — and
 * how far it got. warm-start.ts trains it; the KL penalty's reference engine (reference.ts) and the
 * rollout workers (async-rl.ts) read it.
 *
 * The key names, one by one, the fields that change what a warm start learns, with a version
 * number; every value is as parsed (defaults filled in), so writing a default out or leaving it
 * to the schema gives one key. Fields that do not change what is learnt stay out: the RL phase's
 * settings (strategy, loss, train, the optimizer's lr and schedule), the rewards (demonstrations
 * follow the solver whatever they pay), and how the work is cut (memoryBudget, microBatchSize,
 * the ORT arenas: the same math in other batches, only rounded in another order).
 *
 * A new recipe field that changes what a warm start learns joins the key either absent while at
 * its default (every existing id stays) or with WARM_START_KEY_VERSION raised (every warm start is
 * trained anew, and the version says why).
 */
import { stableHash, type Team } from "@troupe/core";
import type { ObjectStore } from "@troupe/storage";
import { RunStore } from "@troupe/storage";
import { type Recipe, type SftRecipe, SftSchema, sftBeforeLaterDefaults } from "../recipe.ts";

/** The version of warmStartKey's fields; version 1 hashed whole recipe sections (legacyWarmStartKey). */
export const WARM_START_KEY_VERSION = 2;

/** The cache key of a recipe's warm start: every field that changes what it learns, named. */
export function warmStartKey(recipe: Recipe, team: Team) {
  const { model, engine, environment, optimizer } = recipe;
  const sft = recipe.sft ?? SftSchema.parse({});
  // Demonstrations follow the solver whatever the rewards are: runs that differ only in their
  // rewards share one warm start.
  const { rewards: _rewards, ...options } = environment.options;
  return {
    version: WARM_START_KEY_VERSION,
    seed: recipe.seed,
    model: {
      from: model.from ?? null,
      hidden_size: model.hidden_size,
      intermediate_size: model.intermediate_size,
      num_hidden_layers: model.num_hidden_layers,
      num_attention_heads: model.num_attention_heads,
      num_key_value_heads: model.num_key_value_heads,
      max_position_embeddings: model.max_position_embeddings,
      tie_word_embeddings: model.tie_word_embeddings,
      model_type: model.model_type,
    },
    // The engine decides what a checkpoint holds (full weights, or LoRA adapters on a base, in
    // which dtype); the embedded engine's windowed graphs round differently from its full ones.
    engine: engineKey(engine),
    environment: {
      name: environment.name,
      options,
      // An environment of one's own: its module's content (an edited module demonstrates anew; a
      // moved one does not).
      module: environment.module?.sha256 ?? null,
    },
    // Demonstrations are the team's turns: its roles (and their policies), turn budget and order
    // (in parallel order the later roles see the turn's starting board, not their teammates' reports).
    team: { roles: team.roles, maxTurns: team.maxTurns, turnOrder: team.turnOrder },
    sft: {
      steps: sft.steps,
      batchSize: sft.batchSize,
      lr: sft.lr,
      schedule: sft.schedule,
      warmupSteps: sft.warmupSteps,
      minLrRatio: sft.minLrRatio,
      decayFraction: sft.decayFraction,
      mistakeRate: sft.mistakeRate,
      mistakeRoles: sft.mistakeRoles ?? null,
      environmentOptions: sft.environmentOptions ?? null,
      cut: sft.cut ?? null,
      stopAtNll: sft.stopAtNll ?? null,
    },
    // The warm start has its own learning rate and schedule; the rest of the optimizer applies.
    optimizer: {
      beta1: optimizer.beta1,
      beta2: optimizer.beta2,
      eps: optimizer.eps,
      weightDecay: optimizer.weightDecay,
      maxGradNorm: optimizer.maxGradNorm,
    },
  };
}

/**
 * What of the engine section changes a warm start: the embedded engine's completion window (its
 * graphs round differently); for the torch worker, what a checkpoint holds and how it computes
 * (dtype, autocast, the model's code, LoRA adapters, per-policy models, the chat template).
 */
function engineKey(engine: Recipe["engine"]) {
  switch (engine.kind) {
    case "onnx":
      return { kind: engine.kind, completionWindow: engine.completionWindow === true };
    case "torch":
      return {
        kind: engine.kind,
        dtype: engine.dtype,
        autocast: engine.autocast,
        modelBackend: engine.modelBackend,
        lora: engine.lora ?? null,
        policyModels: engine.policyModels,
        chatTemplateKwargs: engine.chatTemplateKwargs,
      };
    default:
      return { kind: engine.kind };
  }
}

export function warmStartId(recipe: Recipe, team: Team): string {
  return `sft-${stableHash(warmStartKey(recipe, team)).slice(0, 16)}`;
}

/**
 * The key of version 1, kept to find warm starts cached before version 2: whole recipe sections,
 * and an `sft` section without the fields version 2 gave defaults (their defaults were the values
 * version 1 used when they were absent).
 */
export function legacyWarmStartKey(recipe: Recipe, team: Team) {
  const { rewards: _rewards, ...options } = recipe.environment.options;
  const engine = recipe.engine.kind === "onnx" ? undefined : recipe.engine;
  const windowed = recipe.engine.kind === "onnx" && recipe.engine.completionWindow === true;
  return {
    model: recipe.model,
    ...(engine ? { engine } : {}),
    ...(windowed ? { completionWindow: true } : {}),
    environment: { name: recipe.environment.name, options },
    ...(recipe.environment.module ? { module: recipe.environment.module.sha256 } : {}),
    roles: team.roles,
    maxTurns: team.maxTurns,
    ...(team.turnOrder === "sequential" ? {} : { turnOrder: team.turnOrder }),
    sft: recipe.sft === undefined ? undefined : sftBeforeLaterDefaults(recipe.sft),
    optimizer: {
      beta1: recipe.optimizer.beta1,
      beta2: recipe.optimizer.beta2,
      eps: recipe.optimizer.eps,
      weightDecay: recipe.optimizer.weightDecay,
      maxGradNorm: recipe.optimizer.maxGradNorm,
    },
    seed: recipe.seed,
  };
}

export function legacyWarmStartId(recipe: Recipe, team: Team): string {
  return `sft-${stableHash(legacyWarmStartKey(recipe, team)).slice(0, 16)}`;
}

/**
 * The run a recipe's warm start is cached in: the one of its key, or — when that one has no
 * committed step and the store holds one under the version-1 key — that older one, still valid
 * (the same fields, hashed whole). `found` says which.
 */
export async function warmStartRun(
  store: ObjectStore,
  recipe: Recipe,
  team: Team,
): Promise<{ readonly runStore: RunStore; readonly found: "current" | "version 1" | "none" }> {
  const current = new RunStore(store, warmStartId(recipe, team));
  if ((await current.latestCommittedStep()) !== undefined) return { runStore: current, found: "current" };
  const legacy = new RunStore(store, legacyWarmStartId(recipe, team));
  if ((await legacy.latestCommittedStep()) !== undefined) return { runStore: legacy, found: "version 1" };
  return { runStore: current, found: "none" };
}

/**
 * Where a warm start in `runStore` stands: its newest committed step, and whether that step is its
 * last — the step `sft.steps − 1`, or an earlier one committed as final when `sft.stopAtNll` was
 * reached.
 */
export async function warmStartProgress(
  runStore: RunStore,
  sft: SftRecipe,
): Promise<{ readonly latest: number | undefined; readonly finished: boolean }> {
  const latest = await runStore.latestCommittedStep();
  if (latest === undefined) return { latest, finished: false };
  if (latest === sft.steps - 1) return { latest, finished: true };
  const manifest = await runStore.readStepManifest(latest);
  return { latest, finished: manifest.meta.final === true };
}
