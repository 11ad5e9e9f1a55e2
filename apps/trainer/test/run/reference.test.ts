/**
 * The KL penalty to the warm start, end to end on the embedded engine: train() builds the
 * reference policy from the store's cached warm start (src/run/reference.ts), the learner scores ℓ_ref
 * with it every step, and a resumed run keeps pulling towards the warm start — not towards the
 * checkpoint it resumed from — so it commits the same metrics and weights as a run never stopped.
 */
import { join } from "node:path";
import { sha256Hex, teamPolicies } from "@troupe/core";
import { FileStore, type RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { createEnvironment, recipeTeam } from "../../src/envs.ts";
import { loadRecipeText, type Recipe } from "../../src/recipe.ts";
import { createReferenceEngine } from "../../src/run/reference.ts";
import { TINY_PLAN_PATH, tempRoot, trainRun } from "../tiny.ts";

const root = tempRoot("kl");

// Raw rewards as advantages (no baseline, no std): every sample carries signal, so every step
// updates the policy and reports its KL.
const recipe: Recipe = loadRecipeText(`
name: kl
seed: 5
${TINY_PLAN_PATH}
strategy: { name: atgrpo, candidates: 2, advantage: { baseline: raw, normalizeStd: false, eps: 0.000001 } }
sampling: { temperature: 0.7, maxTokens: 8 }
optimizer: { lr: 0.01 }
loss: { klCoef: 0.2 }
sft: { steps: 2, batchSize: 8, lr: 0.01, mistakeRate: 0.3 }
train: { steps: 3, tasksPerStep: 2, evalEvery: 0, evalTasks: 2, checkpointEvery: 1 }
`);
const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
const team = recipeTeam(trainerEnv, recipe.team);
const policies = teamPolicies(team); // planner and fixer, a policy each

const klByStep = async (runStore: RunStore) =>
  (await runStore.readMetrics({ committedOnly: true }))
    .filter((row) => row.source === "learner")
    .map((row) => policies.map((id) => row.metrics[`${id}/kl`] as number));

describe("KL penalty to the warm start", () => {
  const store = new FileStore(join(root, "store"));

  it("refuses to build a reference before the warm start exists", async () => {
    await expect(createReferenceEngine(recipe, team, new FileStore(join(root, "empty")))).rejects.toThrow(
      /reference policy: the warm start sft-\w+ is not finished \(newest committed step none of 2\)/,
    );
  });

  it("starts at KL 0 (the policy is the warm start), grows as RL moves away, and resumes to the same run", async () => {
    const straight = await trainRun(recipe, store, "straight");
    expect(straight.summary.lastCommittedStep).toBe(2);
    const kl = await klByStep(straight.runStore);
    expect(kl).toHaveLength(3);
    for (const [p, id] of policies.entries()) {
      // Step 0: π = π_ref exactly (the same weights through the same scoring graph): k3 = 0.
      expect(kl[0]![p], id).toBe(0);
      expect(kl[1]![p], id).toBeGreaterThan(1e-4);
      expect(kl[2]![p], id).toBeGreaterThan(kl[1]![p]!);
    }

    const first = await trainRun(recipe, store, "resumed", 0);
    expect(first.summary).toMatchObject({ stoppedEarly: true, lastCommittedStep: 0 });
    const second = await trainRun(recipe, store, "resumed");
    expect(second.summary).toMatchObject({ firstStep: 1, lastCommittedStep: 2 });
    // Had the resumed run taken its step-0 checkpoint as the reference, step 1's KL would be ≈ 0.
    expect(await klByStep(second.runStore)).toEqual(kl);
    for (const id of policies) {
      const weights = async (r: RunStore) => sha256Hex((await r.readCheckpoint(id, 2))["model.safetensors"]!);
      expect(await weights(second.runStore), id).toBe(await weights(straight.runStore));
    }
  }, 120_000);
});
