/**
 * `engine.rollout`: the torch learner paired with OpenAI-compatible servers for rollouts
 * (@troupe/engine-openai's paired engine). This file holds what the trainer decides: the checks
 * of the recipe, which learner call writes a version's weights (a LoRA adapter with saveTo, a
 * merged model with exportTo) and where (engine.rollout.syncDir).
 *
 * The trainer tags each sample with the step whose weights sampled it, so the pairing is strictly
 * on-policy (maxStaleness 0): a step's rollouts wait until every server serves the weights the
 * learner has after the previous step. Engines of the recipe that never generate (the KL
 * reference) send nothing to the servers.
 */
import { mkdirSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { PolicyId } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import {
  createOpenAIEngine,
  createPairedEngine,
  type PairedEngine,
  type WeightSync,
} from "@troupe/engine-openai";
import { type Recipe, RecipeError, type RolloutServersRecipe, type TorchEngineRecipe } from "../recipe.ts";

/** The checks of engine.rollout, before anything is built. */
export function checkServerRollouts(
  recipe: Recipe,
  engine: TorchEngineRecipe,
  rollout: RolloutServersRecipe,
  policyIds: readonly PolicyId[],
): void {
  if (recipe.mode !== "all") {
    throw new RecipeError(
      `recipe: engine.rollout: server rollouts run with mode "all" (this recipe has mode "${recipe.mode}"; rollout workers sample with their own engine)`,
    );
  }
  if (rollout.weightSync === "lora" && !engine.lora) {
    throw new RecipeError(
      'recipe: engine.rollout.weightSync: "lora" needs engine.lora (one adapter per policy); use weightSync "full" to send whole models',
    );
  }
  if (rollout.weightSync === "full") {
    if (rollout.reloadPath === undefined) {
      throw new RecipeError(
        'recipe: engine.rollout.reloadPath: required with weightSync "full" (SGLang: /update_weights_from_disk; vLLM has no standard reload route)',
      );
    }
    if (policyIds.length > 1) {
      throw new RecipeError(
        `recipe: engine.rollout.weightSync: "full" serves one model per server and the team has ${policyIds.length} policies (${policyIds.join(", ")}); use team.specialisation "shared" or weightSync "lora"`,
      );
    }
    if (rollout.servedModel === undefined && recipe.model.from === undefined) {
      throw new RecipeError(
        "recipe: engine.rollout.servedModel: required when model.from is unset (the model name the servers serve)",
      );
    }
  }
}

/** The learner calls that write a folder on the learner's machine (the torch engine has them). */
interface FolderWriter {
  saveTo(policyId: PolicyId, dir: string): Promise<string[]>;
  exportTo(policyId: PolicyId, dir: string, dtype?: "F32" | "BF16"): Promise<string[]>;
}

function writesFolders(engine: Engine): engine is Engine & FolderWriter {
  const e = engine as Partial<FolderWriter>;
  return typeof e.saveTo === "function" && typeof e.exportTo === "function";
}

/**
 * `writeWeights` for the paired engine: `<syncDir>/<name>/`, written by the learner itself when it
 * can (the torch worker: a PEFT adapter with saveTo, a merged HF model with exportTo), else from its
 * checkpoint files (the embedded engine's checkpoint is a full HF folder). The learner call is made
 * before the first await, so the folder holds the weights of the update just made.
 */
export function folderWeights(
  learner: Engine,
  weightSync: WeightSync,
  syncDir: string,
  dtype: "F32" | "BF16" = "BF16",
): (policyId: PolicyId, name: string) => Promise<string> {
  return async (policyId, name) => {
    const dir = join(syncDir, name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    if (writesFolders(learner)) {
      await (weightSync === "lora" ? learner.saveTo(policyId, dir) : learner.exportTo(policyId, dir, dtype));
      return dir;
    }
    const files = await learner.save(policyId);
    for (const [file, bytes] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      await writeFile(join(dir, file), bytes);
    }
    return dir;
  };
}

/** The recipe's learner paired with its rollout servers. */
export function pairWithServers(
  recipe: Recipe,
  engine: TorchEngineRecipe,
  rollout: RolloutServersRecipe,
  learner: Engine,
  policyIds: readonly PolicyId[],
  syncDir: string,
): PairedEngine {
  const chatTemplateKwargs =
    Object.keys(engine.chatTemplateKwargs).length > 0
      ? { chat_template_kwargs: engine.chatTemplateKwargs }
      : undefined;
  // lora: the model name is replaced by the adapter's before any request goes out.
  const model = (id: PolicyId) =>
    rollout.weightSync === "lora" ? id : (rollout.servedModel ?? recipe.model.from!);
  const servers = rollout.baseUrls.map((baseUrl) =>
    createOpenAIEngine({
      baseUrl,
      ...(rollout.apiKey !== undefined ? { apiKey: rollout.apiKey } : {}),
      models: Object.fromEntries(
        policyIds.map((id) => [
          id,
          { model: model(id), ...(chatTemplateKwargs ? { extraBody: chatTemplateKwargs } : {}) },
        ]),
      ),
      concurrency: rollout.concurrency,
      timeoutMs: Math.round(rollout.timeoutSeconds * 1000),
      retries: rollout.retries,
    }),
  );
  const dir = join(syncDir, recipe.name);
  return createPairedEngine({
    learner,
    servers,
    weightSync: rollout.weightSync,
    writeWeights: folderWeights(
      learner,
      rollout.weightSync,
      dir,
      rollout.exportDtype === "bfloat16" ? "BF16" : "F32",
    ),
    releaseWeights: async (folder) => rmSync(folder, { recursive: true, force: true }),
    ...(rollout.reloadPath !== undefined ? { reloadPath: rollout.reloadPath } : {}),
    maxStaleness: 0,
  });
}
