/**
 * A run's checkpoints as the commands read them back: the newest committed step with a checkpoint
 * of every policy (or the one asked for, refused naming the steps that have them), and one step's
 * checkpoints loaded into an engine (weights equal to the ones saved).
 */
import { teamPolicies } from "@troupe/core";
import { FileStore, RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engines.ts";
import { recipeEnvironment } from "../../src/envs.ts";
import { loadRecipeText, RecipeError } from "../../src/recipe.ts";
import { checkpointedStep, restoreStep } from "../../src/run/checkpoints.ts";
import { TINY_ONE_TURN, tempRoot } from "../tiny.ts";

const root = tempRoot("checkpoints");
const recipe = loadRecipeText(`name: ck\nseed: 3\n${TINY_ONE_TURN}\n`);
const { team } = recipeEnvironment(recipe);
const policies = teamPolicies(team);
const bytes = (text: string) => ({ "weights.bin": new TextEncoder().encode(text) });

describe("checkpointedStep", () => {
  it("the newest committed step with every policy's checkpoint, or the one asked for", async () => {
    const run = new RunStore(new FileStore(root), "steps");
    expect(policies.length).toBeGreaterThan(1);
    // Steps 0–3 commit; every policy has checkpoints at 0 and 2, the first policy also at 3; step 4
    // has checkpoints but never committed.
    for (const step of [0, 1, 2, 3]) await run.commitStep(step, {});
    for (const policyId of policies) {
      for (const step of [0, 2, 4]) await run.writeCheckpoint(policyId, step, bytes(`${policyId}@${step}`));
    }
    await run.writeCheckpoint(policies[0]!, 3, bytes("partial"));

    expect(await checkpointedStep(run, team, undefined, "eval")).toBe(2);
    expect(await checkpointedStep(run, team, 0, "--step")).toBe(0);
    await expect(checkpointedStep(run, team, 3, "--step")).rejects.toThrow(
      new RecipeError(
        "--step: run steps has no committed step with checkpoints at 3 (steps with checkpoints: 0, 2)",
      ),
    );
    await expect(checkpointedStep(run, team, 4, "publish")).rejects.toThrow(
      "publish: run steps has no committed step with checkpoints at 4 (steps with checkpoints: 0, 2)",
    );
    const empty = new RunStore(new FileStore(root), "empty");
    await expect(checkpointedStep(empty, team, undefined, "eval")).rejects.toThrow(
      /^eval: run empty has no committed step with checkpoints$/,
    );
  });
});

describe("restoreStep", () => {
  it("loads every policy's checkpoint of the step into the engine", async () => {
    const run = new RunStore(new FileStore(root), "restore");
    const source = await createEngine(recipe, policies);
    const saved = Object.fromEntries(
      await Promise.all(policies.map(async (p) => [p, await source.save(p)] as const)),
    );
    await source.close();
    await run.commitStep(0, {});
    for (const policyId of policies) await run.writeCheckpoint(policyId, 0, saved[policyId]!);

    // A fresh engine of another seed: different weights until the step is restored.
    const other = loadRecipeText(`name: ck\nseed: 4\n${TINY_ONE_TURN}\n`);
    const engine = await createEngine(other, policies);
    try {
      const before = await engine.save(policies[0]!);
      expect(before).not.toEqual(saved[policies[0]!]);
      await restoreStep(engine, run, team, 0);
      for (const policyId of policies) expect(await engine.save(policyId)).toEqual(saved[policyId]);
    } finally {
      await engine.close();
    }
  });
});
