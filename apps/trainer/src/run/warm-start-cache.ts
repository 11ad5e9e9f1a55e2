/**
 * Where a recipe's warm start is kept — a run of its own, named by the hash of everything that
 * determines its result — and how far it got. warm-start.ts trains it; the KL penalty's reference
 * engine (reference.ts) and the rollout workers (async-rl.ts) read it.
 */
import { stableHash, type Team } from "@troupe/core";
import type { RunStore } from "@troupe/storage";
import type { Recipe } from "../recipe.ts";

/** Everything that determines a warm start's result; its hash names the cached run. */
export function warmStartKey(recipe: Recipe, team: Team) {
  // Demonstrations follow the solver whatever the rewards are, so reward settings are not part of
  // the key: runs that differ only in their rewards share one warm start.
  const { rewards: _rewards, ...options } = recipe.environment.options;
  // The engine decides what a checkpoint holds (full weights, or LoRA adapters on a base).
  const engine = recipe.engine.kind === "onnx" ? undefined : recipe.engine;
  // The windowed graphs round differently (ORT settings that give the same numbers stay out).
  const windowed = recipe.engine.kind === "onnx" && recipe.engine.completionWindow === true;
  return {
    model: recipe.model,
    ...(engine ? { engine } : {}),
    ...(windowed ? { completionWindow: true } : {}),
    environment: { name: recipe.environment.name, options },
    // An environment of one's own: its module's content (an edited module demonstrates anew; a
    // moved one does not). Absent for the built-ins, whose warm starts keep their ids.
    ...(recipe.environment.module ? { module: recipe.environment.module.sha256 } : {}),
    roles: team.roles,
    maxTurns: team.maxTurns,
    // Demonstrations follow the team's turn stages: in parallel order the later roles see the
    // turn's starting board, not their teammates' reports. (Omitted when sequential, the default,
    // so existing warm starts keep their ids.)
    ...(team.turnOrder === "sequential" ? {} : { turnOrder: team.turnOrder }),
    sft: recipe.sft,
    // The warm start has its own learning rate and schedule; the rest of the optimizer applies.
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

/**
 * Where a warm start in `runStore` stands: its newest committed step, and whether that step is its
 * last — the step `sft.steps − 1`, or an earlier one committed as final when `sft.stopAtNll` was
 * reached.
 */
export async function warmStartProgress(
  runStore: RunStore,
  sft: NonNullable<Recipe["sft"]>,
): Promise<{ readonly latest: number | undefined; readonly finished: boolean }> {
  const latest = await runStore.latestCommittedStep();
  if (latest === undefined) return { latest, finished: false };
  if (latest === sft.steps - 1) return { latest, finished: true };
  const manifest = await runStore.readStepManifest(latest);
  return { latest, finished: manifest.meta.final === true };
}

export function warmStartId(recipe: Recipe, team: Team): string {
  return `sft-${stableHash(warmStartKey(recipe, team)).slice(0, 16)}`;
}
