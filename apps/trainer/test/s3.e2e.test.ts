/**
 * The trainer against a real S3 server (Ceph's RADOS gateway, started by the storage library's
 * vitest globalSetup), through a seeded fault-injecting proxy (500s before and after the server
 * acted, 503 SlowDown, slow responses, stalls past the request timeout, connections cut before
 * the request and mid-body): the run — warm start included — must end byte-identical to the
 * same run in a FileStore. Then a committed checkpoint and a rollout shard are damaged at rest,
 * and the trainer's `eval`, `train --resume` and learner report the object by its key.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalJson, sha256Hex, teamPolicies } from "@troupe/core";
import {
  FileStore,
  listFolders,
  type ObjectStore,
  openStore,
  RolloutQueue,
  RunStore,
} from "@troupe/storage/node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type {} from "../../../libs/storage/test/ceph-setup.ts"; // types of inject("s3")
import { type FaultProxy, startFaultProxy } from "../../../libs/storage/test/fault-proxy.ts";
import { createEngine } from "../src/engines.ts";
import { createEnvironment, recipeTeam } from "../src/envs.ts";
import { loadRecipeText, type Recipe } from "../src/recipe.ts";
import { queueRollouts } from "../src/run/async-rl.ts";
import { train } from "../src/run/train.ts";
import { warmStart } from "../src/run/warm-start.ts";
import { quiet, TINY_ATGRPO, TINY_PLAN_PATH, trainerInProcess } from "./tiny.ts";

const BUCKET = "troupe-test";
const root = mkdtempSync(join(tmpdir(), "troupe-s3e2e-"));
const prefix = `trainer-${process.pid}-${Date.now()}`;
const RUN = "s3e2e-20260101-000000Z"; // named like the CLI's runs, so `eval` without --run finds it

const recipeYaml = (store: string) => `
name: s3e2e
seed: 4
store: ${store}
${TINY_PLAN_PATH}
${TINY_ATGRPO}
train: { steps: 3, tasksPerStep: 2, evalEvery: 0, evalTasks: 2, checkpointEvery: 2 }
`;

// As libs/storage's fault test: every kind of fault, a request timeout below the stalls.
const RATES = {
  error500: 0.06,
  error500After: 0.05,
  slowDown: 0.05,
  slow: 0.1,
  slowMs: 50,
  stall: 0.02,
  stallMs: 1200,
  dropBefore: 0.04,
  dropMidBody: 0.05,
};
const RETRY = { maxAttempts: 12, baseDelayMs: 5, maxDelayMs: 100, requestTimeoutMs: 1000 };

let proxy: FaultProxy;
const saved = { ...process.env };

function s3Options(endpoint: string) {
  const s3 = inject("s3");
  return {
    endpoint,
    region: s3.region,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    createBucket: true,
  };
}

beforeAll(async () => {
  proxy = await startFaultProxy(inject("s3").endpoint, RATES, 13);
});
afterAll(async () => {
  process.env = saved;
  await proxy?.close();
  rmSync(root, { recursive: true, force: true });
});

async function trainInto(recipe: Recipe, store: ObjectStore) {
  const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
  const team = recipeTeam(trainerEnv, recipe.team);
  const engine = await createEngine(recipe, teamPolicies(team));
  const runStore = new RunStore(store, RUN);
  await runStore.writeConfig(recipe);
  await warmStart({ recipe, trainerEnv, team, engine, store, reporter: quiet });
  const summary = await train({ recipe, trainerEnv, team, engine, runStore, reporter: quiet });
  await engine.close();
  expect(summary.lastCommittedStep).toBe(2);
  return runStore;
}

/** Everything a run committed, attempt ids aside: samples, shard checksums, checkpoint bytes. */
async function content(run: RunStore) {
  const steps = await run.committedSteps();
  const out: unknown[] = [steps];
  for (const step of steps) {
    const data = await run.readStep(step);
    out.push(canonicalJson([...data.shards.values()].flat()));
    out.push(data.manifest.objects.map((o) => [o.size, o.sha256]));
  }
  for (const policyId of ["planner", "fixer"]) {
    const ckptSteps = await run.checkpointSteps(policyId);
    out.push(ckptSteps);
    for (const step of ckptSteps) {
      const files = await run.readCheckpoint(policyId, step);
      out.push(Object.entries(files).map(([name, bytes]) => [name, sha256Hex(bytes)]));
    }
  }
  return out;
}

describe("trainer on S3 (Ceph RGW)", () => {
  const fileRecipe = loadRecipeText(recipeYaml(`file://${join(root, "files")}`));
  const s3Uri = `s3://${BUCKET}/${prefix}`;
  const s3Recipe = loadRecipeText(recipeYaml(s3Uri));

  it("a run through a faulty proxy commits byte-identical samples and checkpoints to a FileStore run", async () => {
    const reference = await trainInto(fileRecipe, new FileStore(join(root, "files")));
    const faulty = openStore(s3Uri, { s3: { ...s3Options(proxy.endpoint), ...RETRY } });
    const throughFaults = await trainInto(s3Recipe, faulty);
    proxy.enabled = false;
    const expected = await content(reference);
    expect(await content(throughFaults)).toEqual(expected);
    // Read back directly from the server, not through the proxy: the same.
    const direct = new RunStore(openStore(s3Uri, { s3: s3Options(inject("s3").endpoint) }), RUN);
    expect(await content(direct)).toEqual(expected);
    for (const kind of [
      "error500",
      "error500After",
      "slowDown",
      "slow",
      "dropBefore",
      "dropMidBody",
    ] as const)
      expect(proxy.counts[kind], kind).toBeGreaterThan(0);
  }, 120_000);

  it("a corrupted checkpoint and a truncated rollout shard are named by key on eval, resume and read", async () => {
    // The CLI reaches Ceph through the SDK's standard environment variables.
    const s3 = inject("s3");
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      AWS_REGION: s3.region,
    });
    const recipePath = join(root, "s3.yaml");
    writeFileSync(recipePath, recipeYaml(s3Uri));
    const store = openStore(s3Uri, { s3: s3Options(s3.endpoint) });
    const run = new RunStore(store, RUN);
    // Intact, the committed run evaluates fine through the CLI — found as the recipe's newest run
    // by a delimiter listing of runs/ (a warm-start run sits beside it).
    expect(await listFolders(store, "runs/")).toHaveLength(2);
    expect((await trainerInProcess(["eval", "--recipe", recipePath])).code).toBe(0);

    const manifestKey = `runs/${RUN}/checkpoints/fixer/00000002/manifest.json`;
    const manifest = JSON.parse(new TextDecoder().decode(await store.get(manifestKey)));
    const weightsKey = `runs/${RUN}/checkpoints/fixer/00000002/${manifest.attempt}/model.safetensors`;
    const weights = await store.get(weightsKey);
    const flipped = new Uint8Array(weights);
    flipped[100] = flipped[100]! ^ 0xff;
    await store.put(weightsKey, flipped);
    const evalRun = await trainerInProcess(["eval", "--recipe", recipePath, "--run", RUN]);
    expect(evalRun.code).toBe(2);
    expect(evalRun.stderr).toContain(`${weightsKey}: sha256`);
    expect(evalRun.stderr).toContain("(corrupted)");
    // Resume reads the same checkpoint: refused, naming it, before any work.
    await store.put(weightsKey, weights.subarray(0, weights.length - 64));
    const resumed = await trainerInProcess(["train", "--recipe", recipePath, "--run", RUN, "--resume"]);
    expect(resumed.code).toBe(2);
    expect(resumed.stderr).toContain(
      `${weightsKey}: size ${weights.length - 64} bytes, manifest says ${weights.length}`,
    );
    await store.put(weightsKey, weights);

    // A rollout shard truncated at rest: the learner refuses it by key instead of training on it.
    const queue = new RolloutQueue(store, "s3-queue");
    const samples = [...(await run.readStep(0)).shards.values()].flat();
    const { ref, manifest: shardManifest } = await queue.commitShard({
      policyVersion: 0,
      workerId: "step-00000000",
      seq: 0,
      samples: samples.map((s) => ({ ...s, provenance: { ...s.provenance, policyVersion: 0 } })),
    });
    const shardKey = `${ref.folder}/${shardManifest.objects[0]!.key}`;
    const bytes = await store.get(shardKey);
    await store.put(shardKey, bytes.subarray(0, bytes.length >> 1));
    const learner = queueRollouts({
      recipe: { ...s3Recipe, train: { ...s3Recipe.train, tasksPerStep: 1 } },
      trainerEnv: createEnvironment(s3Recipe.environment.name, s3Recipe.environment.options),
      runStore: new RunStore(store, "s3-queue"),
      reporter: quiet,
    });
    await expect(learner(0)).rejects.toThrow(`${shardKey}: size ${bytes.length >> 1} bytes`);
  }, 90_000);
});
