/**
 * The reference policy of the KL penalty (loss.klCoef > 0): the weights RL starts from — the
 * recipe's warm start, or the seeded initialisation when there is none — held by a second engine
 * of the recipe's kind under the same policy ids, so `logprobs(policyId, …)` scores
 *   ℓ_ref = log π_ref(token)
 * for the loss's k3 term β·(e^δ − δ − 1), δ = ℓ_ref − ℓ.
 *
 * It is rebuilt from the store, not copied from the training engine: a resumed run's engine holds
 * its last checkpoint, and the penalty must keep pulling towards the warm start, not towards
 * wherever the run happened to stop. The warm start's final checkpoint is the one its cache keeps.
 * Cost: a second copy of the weights (in-process for onnx; a second worker process for torch)
 * and one scoring pass per policy and step.
 */
import { type Team, teamPolicies } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import type { ObjectStore } from "@troupe/storage";
import { createEngine } from "../engines.ts";
import type { Recipe } from "../recipe.ts";
import { warmStartProgress, warmStartRun } from "./warm-start-cache.ts";

export async function createReferenceEngine(recipe: Recipe, team: Team, store: ObjectStore): Promise<Engine> {
  const engine = await createEngine(recipe, teamPolicies(team));
  try {
    const sft = recipe.sft;
    if (sft && sft.steps > 0) {
      const { runStore: cache } = await warmStartRun(store, recipe, team);
      const { latest, finished } = await warmStartProgress(cache, sft);
      if (!finished || latest === undefined) {
        throw new Error(
          `reference policy: the warm start ${cache.runId} is not finished (newest committed step ${latest ?? "none"} of ${sft.steps}); ` +
            "the KL penalty (loss.klCoef > 0) pulls towards it, so run the warm start first",
        );
      }
      for (const policyId of teamPolicies(team))
        await engine.load(policyId, await cache.readCheckpoint(policyId, latest));
    }
    return engine;
  } catch (error) {
    await engine.close();
    throw error;
  }
}
