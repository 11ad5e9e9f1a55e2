/**
 * End-to-end: a real (tiny) ONNX team trained on Plan-Path into a real FileStore, then checked
 * through the store's own readers. The resume test runs 3 steps in one go and 1 + 2 steps with a
 * restart in between: both runs must commit the same samples, byte for byte.
 */
import { join } from "node:path";
import { canonicalJson, teamPolicies } from "@troupe/core";
import { decodeCheckpoint } from "@troupe/engine";
import {
  checkpointFolder,
  FileStore,
  metricsKey,
  RunConflictError,
  type RunStore,
  stepFolder,
} from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { createEnvironment, recipeEnvironment } from "../../src/envs.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { racedStore, TINY_ATGRPO, TINY_PLAN_PATH, tempRoot, trainRun } from "../tiny.ts";

const root = tempRoot("e2e");

const recipeYaml = `
name: e2e
seed: 3
${TINY_PLAN_PATH}
${TINY_ATGRPO}
train: { steps: 3, tasksPerStep: 2, evalEvery: 0, evalTasks: 4, checkpointEvery: 2 }
`;

describe("trainer end to end", () => {
  const recipe = loadRecipeText(recipeYaml);

  it("trains, commits every step with checkpoints, shards and metrics, and resumes to identical samples", async () => {
    const store = new FileStore(join(root, "store"));
    const straight = await trainRun(recipe, store, "straight");
    expect(straight.summary.lastCommittedStep).toBe(2);
    expect(straight.summary.stoppedEarly).toBe(false);
    expect(await straight.runStore.committedSteps()).toEqual([0, 1, 2]);

    // Every committed step has readable, checksummed shards of samples with full provenance.
    const step1 = await straight.runStore.readStep(1);
    const samples = [...step1.shards.values()].flat();
    expect(samples.length).toBeGreaterThan(0);
    for (const s of samples) {
      expect(s.provenance).toMatchObject({
        runId: "straight",
        step: 1,
        strategy: "atgrpo",
        environment: "plan-path",
      });
      expect(["planner", "fixer"]).toContain(s.provenance.agent);
      expect(s.provenance.policyId).toBe(s.provenance.agent);
      expect(s.provenance.policyVersion).toBe(1);
      expect(s.samplingLogprobs).toHaveLength(s.completionTokenIds.length);
    }
    // Checkpoints decode; retention (checkpointEvery 2) kept step 1 ((1 + 1) % 2 = 0) and the newest, 2.
    for (const policyId of teamPolicies(straight.team)) {
      expect(await straight.runStore.checkpointSteps(policyId)).toEqual([1, 2]);
      const ckpt = decodeCheckpoint(await straight.runStore.readCheckpoint(policyId, 2));
      expect(ckpt.config.hidden_size).toBe(32);
    }
    const metrics = await straight.runStore.readMetrics({ committedOnly: true });
    expect(metrics.some((m) => m.source === "eval-start")).toBe(true);
    expect(metrics.filter((m) => m.source === "learner").map((m) => m.step)).toEqual([0, 1, 2]);
    expect(straight.summary.evals.map((e) => e.step)).toEqual([0, 3]);

    // Interrupted after step 0, then resumed in a fresh engine: the same samples at every step.
    const first = await trainRun(recipe, store, "resumed", 0);
    expect(first.summary).toMatchObject({ stoppedEarly: true, lastCommittedStep: 0 });
    const second = await trainRun(recipe, store, "resumed");
    expect(second.summary).toMatchObject({ firstStep: 1, lastCommittedStep: 2 });
    for (const step of [0, 1, 2]) {
      const strip = (run: RunStore) =>
        run
          .readStep(step)
          .then((d) =>
            canonicalJson(
              [...d.shards.values()]
                .flat()
                .map((s) => ({ ...s, provenance: { ...s.provenance, runId: "" } })),
            ),
          );
      expect(await strip(second.runStore)).toBe(await strip(straight.runStore));
    }
  }, 120_000);

  it("stops at a step another process committed first (the same run id started twice), in one line", async () => {
    const store = racedStore(new FileStore(join(root, "raced")), `${stepFolder("raced", 1)}/manifest.json`);
    const run = trainRun(recipe, store, "raced");
    await expect(run).rejects.toThrow(RunConflictError);
    await expect(run).rejects.toThrow(
      /^run raced: step 1 was committed by another process writing this run \(the same run id started twice\); this one stops and the run goes on in the other$/,
    );
  });

  it("stops at a checkpoint another process committed first, before writing the step's metrics row", async () => {
    const [first] = teamPolicies(recipeEnvironment(recipe).team);
    const inner = new FileStore(join(root, "raced-checkpoint"));
    const store = racedStore(inner, `${checkpointFolder("raced-ckpt", first!, 1)}/manifest.json`);
    await expect(trainRun(recipe, store, "raced-ckpt")).rejects.toThrow(
      `run raced-ckpt: the checkpoint of ${first} at step 1 was committed by another process writing this run`,
    );
    // Step 0 is this process's; step 1's metrics row would be the other process's to write.
    expect(await inner.head(metricsKey("raced-ckpt", 0, "learner"))).toBeDefined();
    expect(await inner.head(metricsKey("raced-ckpt", 1, "learner"))).toBeUndefined();
  });

  it("a recipe naming an unknown environment fails before any work, listing the known ones", () => {
    expect(() => createEnvironment("maze", {})).toThrow(
      /^recipe: environment\.name: unknown environment "maze" \(known: plan-path, sokoban, sudoku, coding, math, writing, data-file; or environment\.module: your own file\)$/,
    );
  });
});
