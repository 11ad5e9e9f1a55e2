/**
 * A run's checkpoints as the commands and the loop read them back: which committed step has a
 * checkpoint of every policy, and loading one step's checkpoints into an engine.
 */
import { type Team, teamPolicies } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import type { RunStore } from "@troupe/storage";
import { RecipeError } from "../recipe.ts";

/** Loads the checkpoints of a committed step into the engine. */
export async function restoreStep(
  engine: Engine,
  runStore: RunStore,
  team: Team,
  step: number,
): Promise<void> {
  for (const policyId of teamPolicies(team)) {
    await engine.load(policyId, await runStore.readCheckpoint(policyId, step));
  }
}

/**
 * The step of a run whose checkpoints to read, checked against its manifests up to that step
 * (errors name the key): `requested`, or by default the newest committed step with a checkpoint
 * of every policy (train keeps only every train.checkpointEvery-th step's checkpoints, and the
 * newest). A step without them is refused, naming the steps that have them; `what` begins the
 * message.
 */
export async function checkpointedStep(
  runStore: RunStore,
  team: Team,
  requested: number | undefined,
  what: string,
): Promise<number> {
  let steps = await runStore.committedSteps();
  for (const policyId of teamPolicies(team)) {
    const kept = new Set(await runStore.checkpointSteps(policyId));
    steps = steps.filter((s) => kept.has(s));
  }
  const step = requested ?? steps.at(-1);
  if (step === undefined || !steps.includes(step)) {
    throw new RecipeError(
      `${what}: run ${runStore.runId} has no committed step with checkpoints${step !== undefined ? ` at ${step}` : ""}` +
        (steps.length ? ` (steps with checkpoints: ${steps.join(", ")})` : ""),
    );
  }
  await runStore.verify({ upToStep: step });
  return step;
}
