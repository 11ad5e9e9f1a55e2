/**
 * What a resumed, evaluated or published run trusts: `RunStore.verify` (every committed object,
 * rollout shards included, against its manifest; errors name the key), `sweepUncommitted` (what
 * uncommitted attempts left behind), and `checkStore` (bad store roots fail fast, one line naming
 * the store).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FileStore } from "../src/file-store.ts";
import { IntegrityError } from "../src/manifest.ts";
import { RolloutQueue } from "../src/rollout-queue.ts";
import { RunStore } from "../src/run-store.ts";
import { S3Store } from "../src/s3-store.ts";
import { checkStore, StoreError } from "../src/store-check.ts";
import { syntheticSamples } from "./samples.ts";
import { tempFileStore } from "./stores.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
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

describe("checkStore", () => {
  const root = mkdtempSync(join(tmpdir(), "troupe-check-"));

  it("a folder under /proc or /sys fails at once with one line, without touching it", async () => {
    const started = performance.now();
    const error = await checkStore(new FileStore("/proc/nope")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toBe(
      "store file:///proc/nope: /proc is on proc, a kernel file system: runs cannot be stored there",
    );
    await expect(checkStore(new FileStore("/sys/kernel/troupe"))).rejects.toThrow(
      "store file:///sys/kernel/troupe: /sys/kernel is on sysfs, a kernel file system: runs cannot be stored there",
    );
    expect(performance.now() - started).toBeLessThan(10_000); // it used to never return
  });

  it("a store that is a file, or under a file, is refused naming it; a missing folder is made", async () => {
    const file = join(root, "a-file");
    writeFileSync(file, "x");
    await expect(checkStore(new FileStore(file))).rejects.toThrow(
      `store file://${file}: is a file, not a folder`,
    );
    await expect(checkStore(new FileStore(join(file, "runs")))).rejects.toThrow(
      `store file://${file}/runs: ${file} is a file, not a folder`,
    );
    const fresh = new FileStore(join(root, "new", "deeper", "runs"));
    await expect(checkStore(fresh, { write: false })).rejects.toThrow(
      `store ${fresh.uri}: the folder does not exist`,
    );
    await checkStore(fresh);
    await fresh.put("k", bytes("v"));
    expect(await fresh.list("")).toEqual([{ key: "k", size: 1 }]);
    mkdirSync(join(root, "ok"));
    await checkStore(new FileStore(join(root, "ok")), { write: false });
  });

  it("an S3 store without credentials fails with one line naming the store", async () => {
    const saved = { ...process.env };
    try {
      for (const name of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"])
        delete process.env[name];
      process.env.AWS_EC2_METADATA_DISABLED = "true";
      process.env.AWS_SHARED_CREDENTIALS_FILE = join(root, "none");
      process.env.AWS_CONFIG_FILE = join(root, "none");
      const store = new S3Store({ bucket: "troupe-nokeys", prefix: "x", endpoint: "http://127.0.0.1:9" });
      await expect(checkStore(store)).rejects.toThrow(
        new StoreError(
          "s3://troupe-nokeys/x",
          "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
        ),
      );
      store.close();
    } finally {
      process.env = saved;
    }
  });
});
