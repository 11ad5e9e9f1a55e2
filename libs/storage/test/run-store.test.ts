/**
 * Run layout and commit protocol, on both stores; and what a resumed, evaluated or published run
 * trusts: `RunStore.verify` (every committed object, rollout shards included, against its manifest;
 * errors name the key) and `sweepUncommitted` (what uncommitted attempts left behind).
 */
import { describe, expect, it } from "vitest";
import type { FileStore } from "../src/file-store.ts";
import { IntegrityError } from "../src/manifest.ts";
import { RolloutQueue } from "../src/rollout-queue.ts";
import { mustCommit, RunConflictError, RunStore } from "../src/run-store.ts";
import { syntheticSamples } from "./samples.ts";
import { storeKinds, tempFileStore } from "./stores.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe.each(storeKinds)("RunStore: $name", ({ make }) => {
  it("commits steps, ignores uncommitted ones, and reads back exactly what was written", async () => {
    const run = new RunStore(await make(), "run-a");
    expect(await run.latestCommittedStep()).toBeUndefined();
    const shards = { w0: syntheticSamples(30, 1, "run-a", 0), w1: syntheticSamples(20, 2, "run-a", 0) };
    expect((await run.commitStep(0, shards)).committed).toBe(true);
    expect((await run.commitStep(1, { w0: syntheticSamples(5, 3, "run-a", 1) })).committed).toBe(true);
    // Step 2: data written but no manifest (a crashed writer) — invisible.
    await run.store.put("runs/run-a/steps/00000002/shards/w0.dead.parquet", bytes("partial"));
    expect(await run.committedSteps()).toEqual([0, 1]);
    expect(await run.latestCommittedStep()).toBe(1);
    const step0 = await run.readStep(0);
    expect([...step0.shards.keys()]).toEqual(["w0", "w1"]);
    expect(step0.shards.get("w0")).toEqual(shards.w0);
    expect(step0.shards.get("w1")).toEqual(shards.w1);
    await expect(run.readStep(2)).rejects.toThrow(/step 2 is not committed/);
  });

  it("two concurrent committers of one step: exactly one wins, readers see the winner's shards", async () => {
    const run = new RunStore(await make(), "run-race");
    const candidates = [0, 1, 2, 3].map((i) => ({ w: syntheticSamples(10, 100 + i, "run-race", 4) }));
    const results = await Promise.all(candidates.map((c) => run.commitStep(4, c)));
    const winners = results.filter((r) => r.committed);
    expect(winners).toHaveLength(1);
    // Every loser got the winner's manifest back.
    for (const r of results) expect(r.manifest.attempt).toBe(winners[0]!.manifest.attempt);
    // mustCommit passes the winner's commit through and names the step for every loser.
    for (const r of results) {
      if (r.committed) expect(mustCommit(r, run.runId, "step 4")).toBe(r);
      else
        expect(() => mustCommit(r, run.runId, "step 4")).toThrow(
          new RunConflictError(
            "run run-race: step 4 was committed by another process writing this run (the same run id started twice); " +
              "this one stops and the run goes on in the other",
          ),
        );
    }
    const winnerIndex = results.findIndex((r) => r.committed);
    expect((await run.readStep(4)).shards.get("w")).toEqual(candidates[winnerIndex]!.w);
    // Losers' data objects are orphans; sweeping removes them and leaves the step readable.
    const removed = await run.sweepOrphans(4);
    expect(removed.length).toBeLessThanOrEqual(3);
    expect((await run.readStep(4)).shards.get("w")).toEqual(candidates[winnerIndex]!.w);
  });

  it("a truncated or corrupted shard is reported by name", async () => {
    const run = new RunStore(await make(), "run-corrupt");
    const { manifest } = await run.commitStep(0, {
      s0: syntheticSamples(10, 5),
      s1: syntheticSamples(10, 6),
    });
    const victim = `runs/run-corrupt/steps/00000000/${manifest.objects[1]!.key}`;
    const good = await run.store.get(victim);
    await run.store.put(victim, good.subarray(0, good.length - 100));
    await expect(run.readStep(0)).rejects.toThrow(new RegExp(`${victim.replace(/\./g, "\\.")}: size`));
    const flipped = new Uint8Array(good);
    flipped[200] = flipped[200]! ^ 0xff;
    await run.store.put(victim, flipped);
    const error = await run.readStep(0).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IntegrityError);
    expect((error as IntegrityError).objectKey).toBe(victim);
    expect((error as Error).message).toMatch(/sha256 .* \(corrupted\)/);
  });

  it("checkpoints: files round-trip byte for byte; a corrupted file is named", async () => {
    const run = new RunStore(await make(), "run-ckpt");
    const files = {
      "config.json": bytes('{"hidden":8}'),
      "model.safetensors": new Uint8Array(4096).map((_, i) => (i * 7) & 255),
      "optimizer.safetensors": new Uint8Array(100).fill(3),
      "tokenizer.json": bytes("{}"),
      "trainer_state.json": bytes('{"step":3}'),
    };
    expect((await run.writeCheckpoint("coder", 3, files)).committed).toBe(true);
    expect(await run.checkpointSteps("coder")).toEqual([3]);
    expect(await run.readCheckpoint("coder", 3)).toEqual(files);
    const manifest = (await run.writeCheckpoint("coder", 3, files)).manifest; // second writer loses
    const key = `runs/run-ckpt/checkpoints/coder/00000003/${manifest.attempt}/model.safetensors`;
    await run.store.put(key, new Uint8Array(4096));
    await expect(run.readCheckpoint("coder", 3)).rejects.toThrow(`${key}: sha256`);
    await expect(run.readCheckpoint("coder", 9)).rejects.toThrow(
      /no committed checkpoint of coder at step 9/,
    );
  });

  it("pruneCheckpoints keeps every k-th step and the newest, deletes the rest and crashed attempts, only after the commit", async () => {
    const run = new RunStore(await make(), "run-prune");
    const files = (step: number) => ({
      "model.safetensors": bytes(`weights-${step}`),
      "c.json": bytes("{}"),
    });
    for (let step = 0; step <= 6; step++) {
      for (const policy of ["planner", "fixer"]) await run.writeCheckpoint(policy, step, files(step));
      await run.commitStep(step, {});
    }
    // Crashed attempts (files, no manifest) at steps 2 and 4, and a policy with no newest checkpoint.
    await run.store.put("runs/run-prune/checkpoints/planner/00000002/dead/model.safetensors", bytes("x"));
    await run.store.put("runs/run-prune/checkpoints/planner/00000004/dead/model.safetensors", bytes("x"));
    await run.writeCheckpoint("critic", 1, files(1));
    // Step 7 has checkpoints but is not committed yet: pruning for it is refused.
    await run.writeCheckpoint("planner", 7, files(7));
    await expect(run.pruneCheckpoints(7, { keepEvery: 3 })).rejects.toThrow(/step 7 is not committed/);

    const removed = await run.pruneCheckpoints(6, { keepEvery: 3 });
    // Kept: (step + 1) % 3 === 0 → 2, 5; the newest, 6; and step 7, newer than the commit.
    expect(await run.checkpointSteps("planner")).toEqual([2, 5, 6, 7]);
    expect(await run.checkpointSteps("fixer")).toEqual([2, 5, 6]);
    expect(await run.checkpointSteps("critic")).toEqual([1]); // no checkpoint at 6: left alone
    // A pruned step goes with its crashed attempts; a kept step's leftovers stay (never read).
    expect(removed).toContain("runs/run-prune/checkpoints/planner/00000004/dead/model.safetensors");
    expect(removed).not.toContain("runs/run-prune/checkpoints/planner/00000002/dead/model.safetensors");
    // Each deleted checkpoint lost its manifest before its files.
    const m0 = removed.indexOf("runs/run-prune/checkpoints/fixer/00000000/manifest.json");
    expect(m0).toBeGreaterThanOrEqual(0);
    expect(
      removed.slice(m0 + 1, m0 + 3).every((k) => k.startsWith("runs/run-prune/checkpoints/fixer/00000000/")),
    ).toBe(true);
    expect(removed.filter((k) => k.endsWith("manifest.json"))).toHaveLength(8); // 0,1,3,4 × 2 policies
    expect(await run.readCheckpoint("planner", 5)).toEqual(files(5));
    expect(await run.readCheckpoint("fixer", 6)).toEqual(files(6));
    // Idempotent.
    expect(await run.pruneCheckpoints(6, { keepEvery: 3 })).toEqual([]);
  });

  it("metrics: per-step objects merge into ordered rows; a rewritten step replaces its row", async () => {
    const run = new RunStore(await make(), "run-metrics");
    await run.writeMetrics(2, { loss: 0.5 });
    await run.writeMetrics(0, { loss: 1.5, lr: 1e-5 });
    await run.writeMetrics(0, { accuracy: 0.25 }, "eval");
    await run.writeMetrics(2, { loss: 0.4 }); // resumed step 2 overwrites its crashed attempt's metrics
    expect(await run.readMetrics()).toEqual([
      { step: 0, source: "eval", metrics: { accuracy: 0.25 } },
      { step: 0, source: "learner", metrics: { loss: 1.5, lr: 1e-5 } },
      { step: 2, source: "learner", metrics: { loss: 0.4 } },
    ]);
    await run.commitStep(0, {});
    expect((await run.readMetrics({ committedOnly: true })).map((r) => r.step)).toEqual([0, 0]);
    const jsonl = await run.writeMetricsJsonl();
    expect(jsonl.trim().split("\n")).toHaveLength(3);
    expect(new TextDecoder().decode(await run.store.get("runs/run-metrics/metrics.jsonl"))).toBe(jsonl);
    await expect(run.writeMetrics(3, { loss: Number.NaN })).rejects.toThrow(/loss is NaN/);
  });

  it("config is written once; a different config for the same run is refused", async () => {
    const run = new RunStore(await make(), "run-config");
    await run.writeConfig({ lr: 1e-5 });
    await run.writeConfig({ lr: 1e-5 });
    expect(await run.readConfig()).toEqual({ lr: 1e-5 });
    await expect(run.writeConfig({ lr: 2e-5 })).rejects.toThrow(/already exists with a different config/);
  });
});

const flipByte = async (store: FileStore, key: string, at = 100) => {
  const data = new Uint8Array(await store.get(key));
  data[at] = data[at]! ^ 0x01;
  await store.put(key, data);
};

/** A run with steps 0..2 committed, each with a shard and a checkpoint, and one rollout shard. */
async function threeSteps(): Promise<RunStore> {
  const run = new RunStore(await tempFileStore(), "r");
  for (const step of [0, 1, 2]) {
    await run.writeCheckpoint("p", step, { "model.safetensors": bytes(`weights ${step}`.repeat(50)) });
    await run.writeMetrics(step, { loss: step });
    await run.commitStep(step, { rollouts: syntheticSamples(8, step + 1, "r", step) });
  }
  const queue = new RolloutQueue(run.store, "r");
  await queue.commitShard({
    policyVersion: 0,
    workerId: "w",
    seq: 0,
    samples: syntheticSamples(4, 9, "r", 0),
  });
  return run;
}

describe("RunStore.verify", () => {
  it("reads back every committed object; a flipped byte in a step shard is named by key", async () => {
    const run = await threeSteps();
    expect(await run.verify()).toMatchObject({ steps: 3, checkpoints: 3, rollouts: 1, objects: 7 });
    const [shard] = (await run.store.list("runs/r/steps/00000001/shards/")).map((o) => o.key);
    await flipByte(run.store as FileStore, shard!);
    const error = await run.verify().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IntegrityError);
    expect((error as IntegrityError).objectKey).toBe(shard);
    expect((error as Error).message).toMatch(
      /^runs\/r\/steps\/00000001\/shards\/rollouts\.[0-9a-f]{12}\.parquet: sha256 [0-9a-f]{64}, manifest says [0-9a-f]{64} \(corrupted\)$/,
    );
    // A verification up to step 0 does not read step 1.
    expect(await run.verify({ upToStep: 0 })).toMatchObject({ steps: 1, checkpoints: 1 });
  });

  it("a damaged checkpoint, a damaged rollout shard and a missing object are named too", async () => {
    const run = await threeSteps();
    const [weights] = (await run.store.list("runs/r/checkpoints/p/00000002/"))
      .map((o) => o.key)
      .filter((k) => !k.endsWith("manifest.json"));
    await flipByte(run.store as FileStore, weights!, 3);
    await expect(run.verify()).rejects.toThrow(`${weights}: sha256`);
    await expect(run.verify({ upToStep: 1 })).resolves.toMatchObject({ checkpoints: 2 });

    const other = await threeSteps();
    const [rollout] = (await other.store.list("runs/r/rollouts/"))
      .map((o) => o.key)
      .filter((k) => k.endsWith(".parquet"));
    await flipByte(other.store as FileStore, rollout!);
    await expect(other.verify()).rejects.toThrow(`${rollout}: sha256`);
    await other.store.delete(rollout!);
    await expect(other.verify()).rejects.toThrow(
      `${rollout}: missing, but runs/r/rollouts/00000000/w-00000000/manifest.json lists it`,
    );
  });
});

describe("RunStore.sweepUncommitted", () => {
  it("removes what uncommitted attempts left, keeps every committed object readable", async () => {
    const run = await threeSteps();
    const store = run.store;
    // A losing attempt's shard in committed step 1, and a killed attempt's files in a committed checkpoint.
    await store.put("runs/r/steps/00000001/shards/rollouts.0123456789ab.parquet", bytes("loser"));
    await store.put("runs/r/checkpoints/p/00000001/0123456789ab/model.safetensors", bytes("loser"));
    // Step 3 was killed after its checkpoint committed, before the step did; step 4 after its shard.
    await run.writeCheckpoint("p", 3, { "model.safetensors": bytes("weights 3") });
    await run.writeMetrics(3, { loss: 3 });
    await run.stageStep(3, { rollouts: syntheticSamples(2, 4, "r", 3) });
    await run.stageStep(4, { rollouts: syntheticSamples(2, 5, "r", 4) });
    expect(await run.latestCommittedStep()).toBe(2);

    const before = new Set((await store.list("runs/r/")).map((o) => o.key));
    const removed = await run.sweepUncommitted();
    const after = (await store.list("runs/r/")).map((o) => o.key);
    expect(new Set([...after, ...removed])).toEqual(before);
    expect(removed).toEqual(
      expect.arrayContaining([
        "runs/r/steps/00000001/shards/rollouts.0123456789ab.parquet",
        "runs/r/checkpoints/p/00000001/0123456789ab/model.safetensors",
        "runs/r/checkpoints/p/00000003/manifest.json",
        "runs/r/metrics/00000003.learner.json",
      ]),
    );
    // Nothing of steps 3 and 4 is left; the checkpoint's manifest went before its files.
    expect(after.filter((k) => /\/0000000[34]/.test(k))).toEqual([]);
    expect(removed.indexOf("runs/r/checkpoints/p/00000003/manifest.json")).toBeLessThan(
      removed.findIndex(
        (k) => k.startsWith("runs/r/checkpoints/p/00000003/") && !k.endsWith("manifest.json"),
      ),
    );
    // Every remaining data object is listed by a manifest, and the run verifies.
    expect(await run.verify()).toMatchObject({ steps: 3, checkpoints: 3, rollouts: 1, objects: 7 });
    expect(after.filter((k) => !k.endsWith("manifest.json") && !k.includes("/metrics/"))).toHaveLength(7);
    expect(await run.sweepUncommitted()).toEqual([]);
  });
});
