/**
 * Fault test: the trainer CLI is killed with SIGKILL at 20 points — after each warm-start step,
 * and at six places in each RL step (after rollouts, after the learner, between two policies'
 * checkpoints, after the checkpoints, after the metrics, after the commit) — resuming after each
 * kill. The chain must end with the same committed steps, the same samples (byte for byte) and the
 * same final weights as a run that was never interrupted.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { canonicalJson, sha256Hex } from "@troupe/core";
import { FileStore, RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { TINY_THREE_STEPS, tempRoot, trainerProcess, writeTinyRecipe } from "./tiny.ts";

const root = tempRoot("kill");

const { recipePath, storeRoot } = writeTinyRecipe(root, "kill", 5, TINY_THREE_STEPS);

function launch(runId: string, resume: boolean, killAt?: string) {
  const [command, argv, options] = trainerProcess(
    ["train", "--recipe", recipePath, "--run", runId, ...(resume ? ["--resume"] : [])],
    killAt === undefined ? {} : { TROUPE_KILL_AT: killAt },
  );
  return spawnSync(command, argv, { ...options, encoding: "utf8", timeout: 120_000 });
}

const KILL_POINTS = [
  "sft-after-step@0",
  "sft-after-step@1",
  ...[0, 1, 2].flatMap((step) =>
    ["after-rollout", "after-learner", "mid-checkpoints", "after-checkpoints", "after-commit"].map(
      (phase) => `${phase}@${step}`,
    ),
  ),
];

describe("kill -9 at every phase, then resume", () => {
  it("loses and duplicates nothing: same steps, samples and weights as an uninterrupted run", () => {
    expect(KILL_POINTS).toHaveLength(17);
    const reference = launch("reference", false);
    expect(reference.status, reference.stderr).toBe(0);

    // The warm start is cached by content: use a separate store path for the victim so its
    // warm start is really computed (and killed) rather than loaded from the reference's cache.
    writeFileSync(
      recipePath,
      readRecipe().replace(`store: file://${storeRoot}`, `store: file://${join(root, "store2")}`),
    );
    const outcomes = KILL_POINTS.map((point, i) => {
      const run = launch("victim", i > 0, point);
      return { point, signal: run.signal, status: run.status, stderr: run.stderr };
    });
    for (const o of outcomes)
      expect({ point: o.point, signal: o.signal }, o.stderr).toEqual({ point: o.point, signal: "SIGKILL" });
    const last = launch("victim", true);
    expect(last.status, last.stderr).toBe(0);
    return compare();
  }, 600_000);
});

function readRecipe(): string {
  return readFileSync(recipePath, "utf8");
}

async function compare(): Promise<void> {
  const ref = new RunStore(new FileStore(storeRoot), "reference");
  const victim = new RunStore(new FileStore(join(root, "store2")), "victim");
  expect(await victim.committedSteps()).toEqual([0, 1, 2]);
  expect(await ref.committedSteps()).toEqual([0, 1, 2]);
  for (const step of [0, 1, 2]) {
    const samples = async (run: RunStore) =>
      canonicalJson(
        [...(await run.readStep(step)).shards.values()]
          .flat()
          .map((s) => ({ ...s, provenance: { ...s.provenance, runId: "" } })),
      );
    expect(await samples(victim)).toBe(await samples(ref));
  }
  for (const policyId of ["planner", "fixer"]) {
    const weights = async (run: RunStore) =>
      sha256Hex((await run.readCheckpoint(policyId, 2))["model.safetensors"]!);
    expect(await weights(victim)).toBe(await weights(ref));
  }
}
