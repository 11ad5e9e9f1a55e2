/**
 * Modes "learner" and "rollout": one learner and two rollout workers that share nothing but a
 * FileStore. Checked through the store: every committed step trained on exactly one claimed
 * shard per task (nothing lost), no shard in two steps (nothing duplicated), every sample tagged
 * with the version it was sampled with, and that version within the staleness bound. With
 * maxStaleness 0 the samples are recomputed here from the committed checkpoints, task by task:
 * byte-identical, so each one really was sampled by the version it names.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { canonicalJson, samplingParams, teamPolicies } from "@troupe/core";
import { runStrategy } from "@troupe/rl";
import { FileStore, RolloutQueue, RunStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { createEngine, policySet } from "../../src/engines.ts";
import { createEnvironment, recipeTeam } from "../../src/envs.ts";
import { loadRecipeText, type Recipe } from "../../src/recipe.ts";
import { LEARNER_CONSUMER, queueRollouts, rolloutWorker, stepStream } from "../../src/run/async-rl.ts";
import { restoreStep } from "../../src/run/checkpoints.ts";
import { trainTasks } from "../../src/run/tasks.ts";
import { train } from "../../src/run/train.ts";
import { warmStart } from "../../src/run/warm-start.ts";
import { quiet, TINY_ATGRPO, TINY_PLAN_PATH, tempRoot, trainerProcess } from "../tiny.ts";

const root = tempRoot("async");

const recipeYaml = (store: string, maxStaleness: number) => `
name: async
seed: 11
store: file://${store}
${TINY_PLAN_PATH}
${TINY_ATGRPO}
train: { steps: 3, tasksPerStep: 3, evalEvery: 0, evalTasks: 2, checkpointEvery: 1 }
maxStaleness: ${maxStaleness}
`;

/** A run of the recipe in process, in its own store under `folder`, its config written. */
async function inProcessRun(folder: string, maxStaleness: number, runId: string) {
  const store = new FileStore(join(root, folder));
  const recipe = loadRecipeText(recipeYaml(join(root, folder), maxStaleness));
  const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
  const team = recipeTeam(trainerEnv, recipe.team);
  const run = new RunStore(store, runId);
  await run.writeConfig(recipe);
  return { store, recipe, trainerEnv, team, run };
}

function launch(
  recipePath: string,
  args: string[],
  killAt?: string,
): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  const [command, argv, options] = trainerProcess(
    ["train", "--recipe", recipePath, ...args],
    killAt === undefined ? {} : { TROUPE_KILL_AT: killAt },
  );
  const child: ChildProcess = spawn(command, argv, { ...options, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 150_000);
  return new Promise((done) =>
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stderr });
    }),
  );
}

/** The accounting every async run must satisfy; returns the consumed shard refs of each step. */
async function checkAccounting(run: RunStore, recipe: Recipe) {
  const queue = new RolloutQueue(run.store, run.runId);
  const steps = await run.committedSteps();
  expect(steps).toEqual([0, 1, 2]);
  const committedShards = await queue.listCommitted();
  const used = new Set<string>();
  const perStep: { step: number; refs: typeof committedShards }[] = [];
  for (const step of steps) {
    const data = await run.readStep(step);
    const consumed = data.manifest.meta.consumed as string[];
    expect(consumed, `step ${step}`).toHaveLength(recipe.train.tasksPerStep);
    const refs = consumed.map((name) => committedShards.find((r) => RolloutQueue.shardName(r) === name)!);
    // One shard per task of this step, in task order.
    expect(refs.map((r) => [r.workerId, r.seq])).toEqual([0, 1, 2].map((task) => [stepStream(step), task]));
    // The step's samples are exactly the claimed shards' samples, in order (the step's with the
    // advantages its advantage stage estimated, the workers' without).
    const fromShards = (await Promise.all(refs.map((r) => queue.readShard(r)))).flat();
    const estimated = [...data.shards.values()].flat();
    expect(estimated.every((s) => Number.isFinite(s.advantage))).toBe(true);
    expect(canonicalJson(estimated.map(({ advantage: _, ...s }) => s))).toBe(canonicalJson(fromShards));
    for (const ref of refs) {
      const name = RolloutQueue.shardName(ref);
      expect(used.has(name), `${name} consumed twice`).toBe(false);
      used.add(name);
      expect(await queue.readClaim(ref, LEARNER_CONSUMER)).toEqual({
        consumer: LEARNER_CONSUMER,
        learnerStep: step,
        expired: false,
      });
      // Staleness: sampled with a version the learner at this step accepts.
      expect(step - ref.policyVersion).toBeGreaterThanOrEqual(0);
      expect(step - ref.policyVersion).toBeLessThanOrEqual(recipe.maxStaleness);
    }
    for (const s of fromShards) expect(s.provenance.step).toBe(step);
    perStep.push({ step, refs });
  }
  // Every committed shard not consumed is a surplus copy, recorded as dropped.
  for (const ref of committedShards) {
    if (used.has(RolloutQueue.shardName(ref))) continue;
    expect((await queue.readClaim(ref, LEARNER_CONSUMER))?.expired, RolloutQueue.shardName(ref)).toBe(true);
  }
  return perStep;
}

describe("asynchronous RL: rollout workers and a learner through the store", () => {
  it("strictly on-policy with 2 worker processes, one killed holding a lease: nothing lost or duplicated, samples recomputable", async () => {
    const store = join(root, "procs");
    const recipePath = join(root, "procs.yaml");
    writeFileSync(recipePath, recipeYaml(store, 0));
    const common = ["--run", "async-1", "--lease-seconds", "2"];
    const [learner, w1, w2] = await Promise.all([
      launch(recipePath, [...common, "--mode", "learner"]),
      launch(recipePath, [...common, "--mode", "rollout", "--worker", "w1"], "rollout-leased@0"),
      launch(recipePath, [...common, "--mode", "rollout", "--worker", "w2"]),
    ]);
    expect(learner.code, learner.stderr).toBe(0);
    expect(w1.signal, w1.stderr).toBe("SIGKILL");
    expect(w2.code, w2.stderr).toBe(0);

    const recipe = loadRecipeText(recipeYaml(store, 0));
    const run = new RunStore(new FileStore(store), "async-1");
    const perStep = await checkAccounting(run, recipe);
    const queue = new RolloutQueue(run.store, run.runId);
    // w1 died before committing anything: every shard is w2's, including the unit w1 had leased.
    for (const { refs } of perStep) {
      for (const ref of refs) expect((await queue.readShardManifest(ref)).meta.producer).toBe("w2");
    }

    // Recompute every unit from the committed weights: version s = warm start (s = 0) or checkpoint s − 1.
    const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
    const team = recipeTeam(trainerEnv, recipe.team);
    const engine = await createEngine(recipe, teamPolicies(team));
    await warmStart({ recipe, trainerEnv, team, engine, store: new FileStore(store), reporter: quiet });
    for (const { step, refs } of perStep) {
      if (step > 0) await restoreStep(engine, run, team, step - 1);
      for (const ref of refs) {
        expect(ref.policyVersion).toBe(step);
        const again = await runStrategy(
          {
            runId: run.runId,
            step,
            seed: recipe.seed,
            env: trainerEnv.env,
            team,
            policies: policySet(engine, team, step),
            sampling: samplingParams(recipe.sampling),
          },
          [trainTasks(trainerEnv, recipe, step)[ref.seq]!],
          recipe.strategy,
        );
        expect(canonicalJson(await queue.readShard(ref))).toBe(canonicalJson(again.samples));
      }
    }
    await engine.close();
  }, 170_000);

  it("maxStaleness 1, learner and 2 workers in one process: staleness bound and accounting hold", async () => {
    const { store, recipe, trainerEnv, team, run } = await inProcessRun("inproc", 1, "async-2");
    const engines = await Promise.all([0, 1, 2].map(() => createEngine(recipe, teamPolicies(team))));
    for (const engine of engines)
      await warmStart({ recipe, trainerEnv, team, engine, store, reporter: quiet });
    const [summary, ...workers] = await Promise.all([
      train({
        recipe,
        trainerEnv,
        team,
        engine: engines[0]!,
        runStore: run,
        reporter: quiet,
        rollouts: queueRollouts({ recipe, trainerEnv, runStore: run, reporter: quiet, pollMs: 20 }),
      }),
      ...["a", "b"].map((workerId, i) =>
        rolloutWorker({
          recipe,
          trainerEnv,
          team,
          engine: engines[i + 1]!,
          runStore: run,
          workerId,
          reporter: quiet,
          pollMs: 20,
        }),
      ),
    ]);
    expect(summary.lastCommittedStep).toBe(2);
    await checkAccounting(run, recipe);
    expect(workers.flatMap((w) => w.committed).length).toBeGreaterThanOrEqual(9);
    for (const engine of engines) await engine.close();
  }, 120_000);

  it("a worker renews its lease while it samples and gives up, naming the run, when no learner commits", async () => {
    const { store, recipe, trainerEnv, team, run } = await inProcessRun("idle", 0, "idle-1");
    const engine = await createEngine(recipe, teamPolicies(team));
    const notes: string[] = [];
    const started = Date.now();
    // No learner: the worker samples step 0's three units with version 0, then has nothing to do.
    const worker = rolloutWorker({
      recipe,
      trainerEnv,
      team,
      engine,
      runStore: run,
      workerId: "a",
      reporter: { ...quiet, note: (line) => notes.push(line) },
      pollMs: 20,
      leaseMs: 15,
      idleMs: 1_000,
    });
    await expect(worker).rejects.toThrow(
      /worker a: nothing to sample and no step of run idle-1 committed for 1 s \(newest committed step: none\)\. Is the learner running\?/,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    const queue = new RolloutQueue(store, "idle-1");
    expect((await queue.listCommitted()).map(RolloutQueue.shardName)).toEqual(
      [0, 1, 2].map((task) => `00000000/${stepStream(0)}-${String(task).padStart(8, "0")}`),
    );
    // Each unit's lease files: the first lease, then renewals, all by worker a (15 ms leases
    // outlive no rollout, so without renewal every unit would have exactly one file).
    const leaseFiles = await store.list(`runs/idle-1/work/${stepStream(0)}-00000000/`);
    expect(leaseFiles.length).toBeGreaterThan(1);
    for (const { key } of leaseFiles) {
      expect(JSON.parse(new TextDecoder().decode(await store.get(key))).workerId).toBe("a");
    }
    expect(notes.filter((n) => /lost/.test(n))).toEqual([]);
    await engine.close();
  }, 60_000);
});
