/**
 * `train --mode rollout --worker <id>` in this process, beside a learner process of the same run:
 * the worker samples every task of every step through the store and stops once the learner
 * committed the last step, saying how many rollout shards it committed. (Two worker processes,
 * one killed holding a lease: test/run/async-rl.test.ts.)
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore, RolloutQueue, RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { commandRolloutWorker } from "../../src/commands/rollout-worker.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { inProcess, TINY_ATGRPO, tempRoot, tinyRecipeText, trainerProcess } from "../tiny.ts";

const root = tempRoot("rollout-worker");
const store = join(root, "store");
const text = tinyRecipeText(
  "rw",
  11,
  store,
  `${TINY_ATGRPO}
train: { steps: 2, tasksPerStep: 2, evalEvery: 0, evalTasks: 2 }
maxStaleness: 0`,
);
const recipePath = join(root, "rw.yaml");
writeFileSync(recipePath, text);

/** The learner of run `runId` as its own process: its exit code and stderr. */
function learner(runId: string): Promise<{ code: number | null; stderr: string }> {
  const [command, argv, options] = trainerProcess([
    "train",
    "--recipe",
    recipePath,
    "--run",
    runId,
    "--mode",
    "learner",
    "--lease-seconds",
    "5",
  ]);
  const child = spawn(command, argv, { ...options, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 240_000);
  return new Promise((done) =>
    child.on("exit", (code) => {
      clearTimeout(timer);
      done({ code, stderr });
    }),
  );
}

describe("rollout worker command", () => {
  it("samples every step's tasks for the learner and stops after its last step", {
    timeout: 300_000,
  }, async () => {
    const recipe = loadRecipeText(text);
    const runStore = new RunStore(new FileStore(store), "rw-1");
    const [learned, worked] = await Promise.all([
      learner("rw-1"),
      inProcess(() =>
        commandRolloutWorker({ recipe, runStore, workerId: "w1", leaseMs: 5_000, idleMs: 120_000 }),
      ),
    ]);
    expect(learned.code, learned.stderr).toBe(0);
    expect(worked.code).toBe(0);
    const match = /^worker w1: committed (\d+) rollout shards\n$/.exec(worked.stdout);
    expect(match, worked.stdout).not.toBeNull();
    expect(await runStore.committedSteps()).toEqual([0, 1]);
    // The only worker: every consumed shard is one of its own, one per task of each step.
    const committed = await new RolloutQueue(runStore.store, runStore.runId).listCommitted();
    expect(committed.length).toBe(Number(match![1]));
    expect(committed.length).toBeGreaterThanOrEqual(2 * 2);
    for (const step of [0, 1]) {
      const consumed = (await runStore.readStep(step)).manifest.meta.consumed as string[];
      expect(consumed, `step ${step}`).toHaveLength(2);
    }
  });
});
