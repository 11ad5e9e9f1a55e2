/** Rollout shards between rollout workers and learners, on both stores: commits, claims and work leases. */
import { describe, expect, it } from "vitest";
import { RolloutQueue } from "../src/rollout-queue.ts";
import { syntheticSamples } from "./samples.ts";
import { storeKinds } from "./stores.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe.each(storeKinds)("RolloutQueue: $name", ({ make }) => {
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
