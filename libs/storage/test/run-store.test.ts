/** Run layout and commit protocol, on both stores. */
import { describe, expect, it } from "vitest";
import { IntegrityError } from "../src/manifest.ts";
import { RolloutQueue } from "../src/rollout-queue.ts";
import { RunStore } from "../src/run-store.ts";
import { syntheticSamples } from "./samples.ts";
import { storeKinds } from "./stores.ts";

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

  it("rollout shards: committed once, listed when committed, read back verified", async () => {
    const store = await make();
    const queue = new RolloutQueue(store, "run-q");
    // A rollout worker's samples: no advantage yet (the learner's advantage stage estimates it).
    const shard = (v: number, seed: number) =>
      syntheticSamples(4, seed, "run-q", v).map(({ advantage: _, ...s }) => ({
        ...s,
        provenance: { ...s.provenance, policyVersion: v },
      }));
    for (const [v, worker, seq] of [
      [0, "w0", 0],
      [1, "w0", 1],
      [2, "w1", 0],
      [2, "w0", 2],
    ] as const) {
      expect(
        (await queue.commitShard({ policyVersion: v, workerId: worker, seq, samples: shard(v, seq) }))
          .committed,
      ).toBe(true);
    }
    // A restarted worker re-committing seq 2 changes nothing.
    expect(
      (await queue.commitShard({ policyVersion: 2, workerId: "w0", seq: 2, samples: shard(2, 99) }))
        .committed,
    ).toBe(false);
    // Uncommitted data (no manifest) is not listed.
    await store.put("runs/run-q/rollouts/00000003/w1-00000001/abc.parquet", bytes("x"));
    expect((await queue.listCommitted()).map(RolloutQueue.shardName)).toEqual([
      "00000000/w0-00000000",
      "00000001/w0-00000001",
      "00000002/w0-00000002",
      "00000002/w1-00000000",
    ]);
    expect((await queue.listCommitted({ minPolicyVersion: 2 })).length).toBe(2);
    expect(await queue.readShard(queue.ref(2, "w0", 2))).toEqual(shard(2, 2));
  });

  it("claimFreshest: one copy per unit, the freshest, surplus expired; a resumed step gets its own claims back", async () => {
    const queue = new RolloutQueue(await make(), "run-claim");
    const stream = "step-00000005";
    const commit = (v: number, seq: number, workerId = stream) =>
      queue.commitShard({
        policyVersion: v,
        workerId,
        seq,
        samples: syntheticSamples(2, 10 * v + seq, "run-claim", v).map((s) => ({
          ...s,
          provenance: { ...s.provenance, policyVersion: v },
        })),
      });
    // Unit 0: two copies (a takeover sampled with a newer version); unit 1: one; unit 2: two, the
    // older one claimed for step 5 by a learner that crashed before committing the step.
    for (const [v, seq] of [
      [3, 0],
      [4, 0],
      [4, 1],
      [2, 2],
      [4, 2],
      [1, 0],
    ] as const)
      await commit(v, seq);
    await commit(4, 0, "step-00000006"); // another step's stream: not a candidate
    expect(await queue.claim(queue.ref(2, stream, 2), "learner", 5)).toBe("claimed");

    const units = await queue.streamShards(stream, { minPolicyVersion: 2 });
    expect([...units].map(([seq, copies]) => [seq, copies.map((r) => r.policyVersion)])).toEqual([
      [0, [4, 3]],
      [1, [4]],
      [2, [4, 2]],
    ]);
    const chosen = (await queue.claimFreshest(units, "learner", 5)).map(RolloutQueue.shardName);
    expect(chosen).toEqual([
      "00000004/step-00000005-00000000",
      "00000004/step-00000005-00000001",
      "00000002/step-00000005-00000002", // the crashed attempt's claim, not the fresher copy
    ]);
    const expired = { consumer: "learner", learnerStep: 5, expired: true };
    expect(await queue.readClaim(queue.ref(3, stream, 0), "learner")).toEqual(expired);
    expect(await queue.readClaim(queue.ref(4, stream, 2), "learner")).toEqual(expired);
    expect(await queue.readClaim(queue.ref(1, stream, 0), "learner")).toBeUndefined(); // below minPolicyVersion
    // Step 5 interrupted again and resumed: the same shards, nothing new claimed.
    expect((await queue.claimFreshest(units, "learner", 5)).map(RolloutQueue.shardName)).toEqual(chosen);
    // No other step of the group can take them; another group (a reference model) sees them afresh.
    await expect(queue.claimFreshest(units, "learner", 6)).rejects.toThrow(
      /^learner: every copy of unit 0 \(00000004\/step-00000005-00000000, 00000003\/step-00000005-00000000\) is claimed for another step than 6$/,
    );
    expect((await queue.claimFreshest(units, "ref-model", 0)).map((r) => r.policyVersion)).toEqual([4, 4, 4]);
    // Two learners of one group racing for a unit with one copy: exactly one gets it.
    await commit(4, 0, "step-00000007");
    const race = await queue.streamShards("step-00000007");
    const results = await Promise.allSettled([
      queue.claimFreshest(race, "learner", 7),
      queue.claimFreshest(race, "learner", 8),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
  });

  it("work leases: one holder at a time, renewal by the holder, takeover only after expiry", async () => {
    const queue = new RolloutQueue(await make(), "run-lease");
    const t0 = 1_000_000;
    const results = await Promise.all(["w1", "w2", "w3"].map((w) => queue.leaseWork("s-0-t-1", w, 500, t0)));
    expect(results.filter((r) => r === "leased")).toHaveLength(1);
    const holder = ["w1", "w2", "w3"][results.indexOf("leased")]!;
    const other = holder === "w1" ? "w2" : "w1";
    expect(await queue.leaseWork("s-0-t-1", holder, 500, t0 + 100)).toBe("mine");
    expect(await queue.leaseWork("s-0-t-1", other, 500, t0 + 499)).toBe("busy");
    // Expired: two takers race for generation 1, exactly one wins.
    const takeover = await Promise.all(["w4", "w5"].map((w) => queue.leaseWork("s-0-t-1", w, 500, t0 + 600)));
    expect(takeover.filter((r) => r === "leased")).toHaveLength(1);
    expect(await queue.leaseWork("s-0-t-1", holder, 500, t0 + 700)).toBe("busy");
    expect((await queue.store.list("runs/run-lease/work/s-0-t-1/")).map((o) => o.key)).toEqual([
      "runs/run-lease/work/s-0-t-1/00000000.json",
      "runs/run-lease/work/s-0-t-1/00000001.json",
    ]);
    // Other units are independent.
    expect(await queue.leaseWork("s-0-t-2", other, 500, t0 + 700)).toBe("leased");
  });

  it("renewLease extends the holder's lease past its first expiry; a taken-over or foreign lease is lost", async () => {
    const queue = new RolloutQueue(await make(), "run-renew");
    const t0 = 2_000_000;
    expect(await queue.renewLease("u", "w1", 500, t0)).toBe("lost"); // never leased
    expect(await queue.leaseWork("u", "w1", 500, t0)).toBe("leased");
    expect(await queue.renewLease("u", "w2", 500, t0 + 100)).toBe("lost"); // not w2's
    expect(await queue.renewLease("u", "w1", 500, t0 + 400)).toBe("renewed"); // now until t0 + 900
    expect(await queue.leaseWork("u", "w2", 500, t0 + 600)).toBe("busy"); // the first lease alone would have expired
    expect(await queue.leaseWork("u", "w1", 500, t0 + 600)).toBe("mine");
    expect(await queue.leaseWork("u", "w2", 500, t0 + 900)).toBe("leased"); // expired: taken over
    expect(await queue.renewLease("u", "w1", 500, t0 + 950)).toBe("lost");
    expect((await queue.store.list("runs/run-renew/work/u/")).map((o) => o.key)).toEqual([
      "runs/run-renew/work/u/00000000.json",
      "runs/run-renew/work/u/00000001.json",
      "runs/run-renew/work/u/00000002.json",
    ]);
  });
});
