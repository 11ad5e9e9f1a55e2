/**
 * The trainer with `engine: { kind: torch }`: a tiny team trained by the PyTorch worker (on CPU,
 * Debian's torch) into a real FileStore.
 *
 * 1. The worker is SIGKILLed in the middle of step 1, after the first policy's step-1 weights are
 *    saved and before the second's: train() fails naming the worker's exit (signal SIGKILL), step
 *    1 is not committed (nothing of it counts), and train() again with a fresh engine
 *    redoes step 1 and finishes. The resumed run commits the same samples as a run never
 *    interrupted, byte for byte (every seed derives from the run seed, step, task and branch).
 * 2. Its checkpoints are the embedded engine's format: the ONNX engine loads the step-1 checkpoint
 *    and scores step 2's samples with the torch worker's log-probs (1e-4).
 * 3. From scratch, both engines start from the same weights (same config, same init seeds).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalJson, type SamplingParams, samplingParams, sha256Hex, teamPolicies } from "@troupe/core";
import { decodeCheckpoint, type Engine } from "@troupe/engine";
import { createOnnxEngine } from "@troupe/engine-onnx";
import { TorchEngine } from "@troupe/engine-torch";
import { runStrategy } from "@troupe/rl";
import { FileStore, RunStore } from "@troupe/storage/node";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine, policySet, scratchCheckpoint } from "../src/engines.ts";
import { createEnvironment, recipeTeam } from "../src/envs.ts";
import { loadRecipeText, parseRecipe, type Recipe } from "../src/recipe.ts";
import type { TrainReporter } from "../src/run/context.ts";
import { batchesByPolicy, learnerStep } from "../src/run/learner.ts";
import { trainTasks } from "../src/run/tasks.ts";
import { optimizerConfig, train } from "../src/run/train.ts";
import { warmStart } from "../src/run/warm-start.ts";

const PYTHON = process.env.TROUPE_PYTHON ?? "/usr/bin/python3";
const torchAvailable = spawnSync(PYTHON, ["-c", "import torch"], { stdio: "ignore" }).status === 0;
if (!torchAvailable) {
  console.warn(`trainer: SKIPPING the torch engine tests — '${PYTHON} -c "import torch"' fails`);
}

const root = mkdtempSync(join(tmpdir(), "troupe-torch-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// Sampling at temperature 1 with no top-p/top-k: the sampling log-probs are the model's log-probs.
const recipe: Recipe = loadRecipeText(`
name: torch-e2e
seed: 4
environment:
  name: plan-path
  options: { roles: compact, maxTurns: 2, rows: 4, cols: 4, blockedFraction: 0.1, minPathLength: 2 }
engine: { kind: torch, python: ${PYTHON}, device: cpu, threads: 1, generator: torch, modelBackend: troupe }
model: { hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1 }
# raw rewards as advantages: the untrained roles' equal rewards still give every policy an update
strategy: { name: atgrpo, candidates: 2, advantage: { baseline: raw, normalizeStd: false, eps: 0.000001 } }
sampling: { temperature: 1, topP: 1, topK: 0, maxTokens: 6 }
optimizer: { lr: 0.003 }
# A wide clip, from when the PPO ratio was not 1 on-policy (the learner now scores ℓ_old itself);
# kept so that the runs below stay the runs they were.
loss: { clipLow: 0.9, clipHigh: 1 }
sft: { steps: 2, batchSize: 8, lr: 0.01, mistakeRate: 0.3 }
train: { steps: 3, tasksPerStep: 1, evalEvery: 0, evalTasks: 2, checkpointEvery: 1 }
`);

const quiet: TrainReporter = { step() {}, eval() {}, note() {} };
const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
const team = recipeTeam(trainerEnv, recipe.team);
const policyIds = teamPolicies(team);

/**
 * The engine, with a SIGKILL of its worker process when `save` is called for the `killAtSave`-th
 * time (counting from 1): the kill lands between two policies' checkpoints of a step.
 */
function killingWorkerAt(engine: TorchEngine, killAtSave: number): Engine {
  let saves = 0;
  return {
    kind: engine.kind,
    policies: () => engine.policies(),
    generate: (requests, sampling) => engine.generate(requests, sampling),
    encode: (policyId, observation, completion) => engine.encode(policyId, observation, completion),
    logprobs: (policyId, sequences) => engine.logprobs(policyId, sequences),
    trainStep: (policyId, batch, config) => engine.trainStep(policyId, batch, config),
    save: async (policyId) => {
      if (++saves === killAtSave) {
        process.kill(engine.workerPid!, "SIGKILL");
        await new Promise((r) => setTimeout(r, 200)); // let the exit be noticed, as after a real OOM kill
      }
      return engine.save(policyId);
    },
    load: (policyId, files) => engine.load(policyId, files),
    close: () => engine.close(),
  };
}

interface RunOptions {
  readonly recipe?: Recipe;
  readonly wrap?: (e: TorchEngine) => Engine;
  /** Stop after the first committed step (as after SIGINT). */
  readonly stopEarly?: boolean;
}

/** A run as main.ts does it: a fresh engine, the (cached) warm start on a new run, then train(). */
async function runTraining(store: FileStore, runId: string, options: RunOptions = {}) {
  const runRecipe = options.recipe ?? recipe;
  const torch = await createEngine(runRecipe, policyIds);
  expect(torch).toBeInstanceOf(TorchEngine);
  const runStore = new RunStore(store, runId);
  await runStore.writeConfig(runRecipe);
  try {
    // The supervised warm start, through the torch engine too (computed once, then cached in the store).
    if ((await runStore.latestCommittedStep()) === undefined)
      await warmStart({ recipe: runRecipe, trainerEnv, team, engine: torch, store, reporter: quiet });
    const engine = options.wrap ? options.wrap(torch as TorchEngine) : torch;
    const summary = await train({
      recipe: runRecipe,
      trainerEnv,
      team,
      engine,
      runStore,
      reporter: quiet,
      ...(options.stopEarly ? { stopRequested: () => true } : {}),
    });
    return { summary, runStore };
  } finally {
    await torch.close();
  }
}

const samplesOf = (run: RunStore, step: number) =>
  run
    .readStep(step)
    .then((d) =>
      canonicalJson(
        [...d.shards.values()].flat().map((s) => ({ ...s, provenance: { ...s.provenance, runId: "" } })),
      ),
    );

describe.skipIf(!torchAvailable)("trainer with the torch engine", () => {
  const store = new FileStore(join(root, "store"));

  it("starts from the onnx engine's initial weights (same config and init seeds)", async () => {
    const torch = (await createEngine(recipe, policyIds)) as TorchEngine;
    const onnx = await createEngine({ ...recipe, engine: { kind: "onnx" } }, policyIds);
    try {
      for (const id of policyIds) {
        const fromTorch = decodeCheckpoint(await torch.save(id));
        const fromOnnx = decodeCheckpoint(await onnx.save(id));
        expect(fromTorch.config).toEqual(fromOnnx.config);
        const expected = decodeCheckpoint(scratchCheckpoint(recipe, id)).weights;
        for (const [name, t] of fromOnnx.weights) {
          expect(fromTorch.weights.get(name)!.data, name).toEqual(t.data);
          expect(expected.get(name)!.data, name).toEqual(t.data);
        }
      }
      // The two roles are different initialisations (seeded by policy id).
      const [a, b] = policyIds.map((id) =>
        decodeCheckpoint(scratchCheckpoint(recipe, id)).weights.get("model.embed_tokens.weight"),
      );
      expect(a!.data).not.toEqual(b!.data);
    } finally {
      await torch.close();
      await onnx.close();
    }
  }, 60_000);

  it("fails with the worker's exit when it is killed mid-step, commits nothing half, and resumes to the same samples", async () => {
    expect(policyIds).toEqual(["planner", "fixer"]);
    const straight = await runTraining(store, "straight");
    expect(straight.summary).toMatchObject({ firstStep: 0, lastCommittedStep: 2, stoppedEarly: false });
    // every policy gets a real (non-zero) policy gradient at every step: the comparison below is not vacuous
    const learner = (await straight.runStore.readMetrics({ committedOnly: true })).filter(
      (m) => m.source === "learner",
    );
    expect(learner.map((m) => m.step)).toEqual([0, 1, 2]);
    for (const m of learner)
      for (const id of policyIds) expect(m.metrics[`${id}/gradNorm`]).toBeGreaterThan(0);

    // train()'s saves 1, 2: step 0's two checkpoints; 3: step 1's planner; the kill comes before 4.
    const crashed = await runTraining(store, "victim", { wrap: (e) => killingWorkerAt(e, 4) }).catch(
      (error: unknown) => error as Error,
    );
    expect(crashed).toBeInstanceOf(Error);
    expect((crashed as Error).message).toMatch(/torch worker exited \(signal SIGKILL\)/);
    const victim = new RunStore(store, "victim");
    expect(await victim.committedSteps()).toEqual([0]);
    expect(await victim.latestCommittedStep()).toBe(0);
    // Whatever of step 1 reached the store before the kill, without the step's manifest none of it
    // counts: the fixer's step-1 weights were never saved, and resume starts from step 0's.
    expect(await victim.checkpointSteps("fixer")).toEqual([0]);

    const resumed = await runTraining(store, "victim");
    expect(resumed.summary).toMatchObject({ firstStep: 1, lastCommittedStep: 2, stoppedEarly: false });
    expect(await victim.committedSteps()).toEqual([0, 1, 2]);
    for (const step of [0, 1, 2]) {
      expect(await samplesOf(victim, step)).toBe(await samplesOf(straight.runStore, step));
    }
    // The learner really stepped (AdamW steps counted in the checkpoint), and the final checkpoints
    // (weights, AdamW moments, optimizer step) are the same files.
    const optimizerSteps = await Promise.all(
      policyIds.map(
        async (id) => decodeCheckpoint(await victim.readCheckpoint(id, 2)).trainerState?.optimizer_step,
      ),
    );
    expect(Math.max(...optimizerSteps.map((n) => n ?? 0))).toBeGreaterThan(recipe.sft!.steps);
    for (const id of policyIds) {
      const [mine, reference] = await Promise.all([
        victim.readCheckpoint(id, 2),
        straight.runStore.readCheckpoint(id, 2),
      ]);
      expect(Object.keys(mine).sort()).toEqual(Object.keys(reference).sort());
      for (const name of ["model.safetensors", "optimizer.safetensors", "trainer_state.json"]) {
        expect(sha256Hex(mine[name]!), `${id} ${name}`).toBe(sha256Hex(reference[name]!));
      }
    }
  }, 120_000);

  it("writes checkpoints the onnx engine loads, with the worker's log-probs (1e-4)", async () => {
    const run = new RunStore(store, "straight");
    const samples = [...(await run.readStep(2)).shards.values()].flat();
    const onnx = await createOnnxEngine({
      policies: await Promise.all(
        policyIds.map(async (id) => ({ id, checkpoint: await run.readCheckpoint(id, 1) })),
      ),
    });
    const torch = await createEngine(recipe, policyIds);
    try {
      let compared = 0;
      for (const id of policyIds) {
        await torch.load(id, await run.readCheckpoint(id, 1));
        // The optimizer step travels with the checkpoint into both engines.
        const step = (e: Engine) => e.policies().find((p) => p.id === id)!.optimizerStep;
        expect(step(onnx)).toBe(step(torch));
        const mine = samples.filter((s) => s.provenance.policyId === id && s.completionTokenIds.length > 0);
        expect(mine.length, id).toBeGreaterThan(0);
        const [fromOnnx, fromTorch] = await Promise.all([onnx.logprobs(id, mine), torch.logprobs(id, mine)]);
        mine.forEach((s, i) => {
          s.completionTokenIds.forEach((_, t) => {
            expect(
              Math.abs(fromOnnx[i]![t]! - fromTorch[i]![t]!),
              `${id} sample ${i} token ${t}`,
            ).toBeLessThan(1e-4);
            // Sampling renormalises over the tokenizer's 259 ids (of 512 rows): log q ≥ log p.
            expect(s.samplingLogprobs[t]!).toBeGreaterThanOrEqual(fromOnnx[i]![t]! - 1e-4);
            compared++;
          });
        });
      }
      expect(compared).toBeGreaterThan(10);
    } finally {
      await onnx.close();
      await torch.close();
    }
  }, 60_000);

  it("trains per-role LoRA adapters, checkpointed and restored separately, resuming to the same run", async () => {
    const lora = parseRecipe({
      ...recipe,
      sft: undefined,
      engine: { ...recipe.engine, lora: { r: 4, alpha: 8 } },
    });
    const loraStore = new FileStore(join(root, "lora"));
    const short = { ...lora, train: { ...lora.train, steps: 2 } };
    const straight = await runTraining(loraStore, "straight", { recipe: short });
    expect(straight.summary.lastCommittedStep).toBe(1);
    for (const m of await straight.runStore.readMetrics({ committedOnly: true })) {
      if (m.source === "learner")
        for (const id of policyIds) expect(m.metrics[`${id}/gradNorm`]).toBeGreaterThan(0);
    }
    const adapters = await Promise.all(policyIds.map((id) => straight.runStore.readCheckpoint(id, 1)));
    for (const files of adapters) {
      expect(Object.keys(files)).toContain("adapter_model.safetensors");
      expect(Object.keys(files)).not.toContain("model.safetensors");
      expect(JSON.parse(new TextDecoder().decode(files["adapter_config.json"]))).toMatchObject({
        r: 4,
        lora_alpha: 8,
      });
      expect(JSON.parse(new TextDecoder().decode(files["trainer_state.json"])).optimizer_step).toBe(2);
    }
    // each role has its own adapter
    expect(sha256Hex(adapters[0]!["adapter_model.safetensors"]!)).not.toBe(
      sha256Hex(adapters[1]!["adapter_model.safetensors"]!),
    );
    // stopped after step 0, resumed in a fresh worker from the stored adapters and AdamW moments
    const first = await runTraining(loraStore, "resumed", { recipe: short, stopEarly: true });
    expect(first.summary).toMatchObject({ stoppedEarly: true, lastCommittedStep: 0 });
    const second = await runTraining(loraStore, "resumed", { recipe: short });
    expect(second.summary).toMatchObject({ firstStep: 1, lastCommittedStep: 1 });
    expect(await samplesOf(second.runStore, 1)).toBe(await samplesOf(straight.runStore, 1));
    for (const [i, id] of policyIds.entries()) {
      const files = await second.runStore.readCheckpoint(id, 1);
      for (const name of ["adapter_model.safetensors", "optimizer.safetensors"]) {
        expect(sha256Hex(files[name]!), `${id} ${name}`).toBe(sha256Hex(adapters[i]![name]!));
      }
    }
  }, 90_000);

  it("the learner's first epoch is on-policy at T = 0.7 and top-p 0.9 (scored ℓ_old, not the sampler's)", async () => {
    const torch = await createEngine(recipe, policyIds);
    try {
      const id = policyIds[0]!;
      const config = { loss: recipe.loss, optimizer: optimizerConfig(recipe), microBatchSize: 4 };
      const rolloutAt = async (sampling: Partial<SamplingParams>) =>
        (
          await runStrategy(
            {
              runId: "ratio",
              step: 0,
              seed: recipe.seed,
              env: trainerEnv.env,
              team,
              policies: policySet(torch, team, 0),
              sampling: samplingParams({ ...recipe.sampling, maxTokens: 6, ...sampling }),
            },
            trainTasks(trainerEnv, { ...recipe, train: { ...recipe.train, tasksPerStep: 3 } }, 0),
            recipe.strategy,
          )
        ).samples
          .filter((s) => s.provenance.policyId === id)
          .map((s, i) => ({ ...s, advantage: i % 2 === 0 ? 1 : -1 }));
      // Sharpen the untrained model (its own greedy plans pushed up) so temperature and top-p
      // change the distribution materially, as after a warm start.
      const greedy = batchesByPolicy(await rolloutAt({ temperature: 0 })).get(id)!;
      for (let i = 0; i < 5; i++) {
        const old = await torch.logprobs(id, greedy);
        await torch.trainStep(
          id,
          greedy.map((s, b) => ({ ...s, advantage: 1, oldLogprobs: old[b]! })),
          { ...config, optimizer: { ...config.optimizer, lr: 0.01 } },
        );
      }
      for (const sampling of [{ temperature: 0.7 }, { topP: 0.9 }]) {
        const samples = await rolloutAt(sampling);
        const sequences = batchesByPolicy(samples).get(id)!;
        const scored = await torch.logprobs(id, sequences);
        const gap = Math.max(
          ...samples
            .filter((s) => s.completionTokenIds.length > 0)
            .flatMap((s, i) => s.samplingLogprobs.map((q, t) => Math.abs(q - scored[i]![t]!))),
        );
        expect(gap, JSON.stringify(sampling)).toBeGreaterThan(0.05); // the sampler's ℓ would be off-policy
        const m = (await learnerStep(torch, samples, config)).get(id)!;
        expect(m.clipFraction, JSON.stringify(sampling)).toBe(0);
        expect(Math.abs(m.approxKl), JSON.stringify(sampling)).toBeLessThan(1e-6);
      }
    } finally {
      await torch.close();
    }
  }, 90_000);

  it("trains with a KL penalty to the warm start, scored by a second worker (KL 0 at step 0, then > 0)", async () => {
    const klRecipe = parseRecipe({
      ...recipe,
      loss: { ...recipe.loss, klCoef: 0.2 },
      train: { ...recipe.train, steps: 2 },
    });
    const { summary, runStore } = await runTraining(new FileStore(join(root, "kl")), "kl", {
      recipe: klRecipe,
    });
    expect(summary.lastCommittedStep).toBe(1);
    const rows = (await runStore.readMetrics({ committedOnly: true })).filter((r) => r.source === "learner");
    expect(rows).toHaveLength(2);
    for (const id of policyIds) {
      // Step 0: the policy is the warm start the reference worker loaded: δ = ℓ_ref − ℓ ≈ 0.
      expect(Math.abs(rows[0]!.metrics[`${id}/kl`] as number), id).toBeLessThan(1e-7);
      expect(rows[1]!.metrics[`${id}/kl`] as number, id).toBeGreaterThan(1e-6);
    }
  }, 90_000);
});
