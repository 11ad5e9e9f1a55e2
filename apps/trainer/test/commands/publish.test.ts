/**
 * Train → publish → resolve → serve: a tiny real ONNX team trained on Plan-Path into a FileStore,
 * published from its newest step, then solved through @troupe/teams. Served with the run's seed
 * and the evaluation sampling, every held-out task comes out exactly as the trainer's evaluation
 * scored it (same prompts, same seeds, same weights).
 */
import { join } from "node:path";
import { teamPolicies } from "@troupe/core";
import { FileStore, RunStore } from "@troupe/storage/node";
import { createTeamRegistry, loadTeam, solve, type TeamManifest, type TeamRegistry } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { describe, expect, it } from "vitest";
import { publishRun } from "../../src/commands/publish.ts";
import { createEngine } from "../../src/engines.ts";
import { createEnvironment, recipeTeam } from "../../src/envs.ts";
import { loadRecipeText, type Recipe } from "../../src/recipe.ts";
import { evalTasks } from "../../src/run/tasks.ts";
import { train } from "../../src/run/train.ts";
import { warmStartId } from "../../src/run/warm-start-cache.ts";
import { quiet, TINY_PLAN_PATH, tempRoot, trainerInProcess, trainRun } from "../tiny.ts";

const root = tempRoot("publish");

const recipe = loadRecipeText(`
name: publish-e2e
seed: 5
${TINY_PLAN_PATH}
strategy: { name: parallel, groupSize: 2 }
sampling: { temperature: 1, maxTokens: 8 }
train: { steps: 2, tasksPerStep: 2, evalEvery: 0, evalTasks: 4, evalTemperature: 0, checkpointEvery: 1 }
`);

/**
 * Serves a published team on every held-out task of its run's recipe with the run's seed and the
 * embedded engine: the episodes the trainer's evaluation scored.
 */
async function serveHeldOut(registry: TeamRegistry, manifest: TeamManifest, recipe: Recipe) {
  const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
  const backend = createOnnxBackend();
  try {
    const loaded = await loadTeam(registry, manifest, backend);
    const results = [];
    for (const task of evalTasks(trainerEnv, recipe))
      results.push(await solve(loaded, { task }, { sampling: { seed: recipe.seed } }));
    return results;
  } finally {
    await backend.close();
  }
}

const sumReturns = (results: readonly { teamReturn: number }[]) =>
  results.reduce((sum, r) => sum + r.teamReturn, 0);

describe("trainer:publish", () => {
  it("publishes a trained run with its eval, and serving reproduces the evaluation task by task", async () => {
    const store = new FileStore(join(root, "store"));
    const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
    const team = recipeTeam(trainerEnv, recipe.team);
    const engine = await createEngine(recipe, teamPolicies(team));
    const runStore = new RunStore(store, "run-1");
    await runStore.writeConfig(recipe);
    const summary = await train({ recipe, trainerEnv, team, engine, runStore, reporter: quiet });
    await engine.close();
    const finalEval = summary.evals.at(-1)!;
    expect(finalEval.step).toBe(2);

    const { manifest, evalSource } = await publishRun({
      store,
      runId: "run-1",
      name: "pathfinders",
      alias: "stable",
    });
    expect(evalSource).toBe("metrics");
    expect(manifest).toMatchObject({
      name: "pathfinders",
      version: 1,
      environment: recipe.environment,
      team: { specialisation: "per-role" },
      roles: [
        { id: "planner", policy: "planner" },
        { id: "fixer", policy: "fixer" },
      ],
      source: { store: store.uri, runId: "run-1", step: 1 },
      eval: {
        successRate: finalEval.result.successRate,
        ci95: [...finalEval.result.ci95],
        tasks: 4,
        meanTeamReturn: finalEval.result.meanTeamReturn,
      },
    });
    for (const policy of Object.values(manifest.policies)) {
      expect(Object.keys(policy.files).sort()).toEqual([
        "config.json",
        "model.onnx",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
      ]);
      expect(policy.sampling).toMatchObject({ temperature: 0, topP: 1, maxTokens: 8 });
      expect(policy.model).toBe("qwen3 hidden 32 × 1 layers, 2 heads (1 kv), vocab 512");
    }

    // Resolve through the alias and serve every held-out task with the run's seed.
    const registry = createTeamRegistry(store);
    const resolved = await registry.resolve("pathfinders", "stable");
    expect(resolved).toEqual(manifest);
    const served = await serveHeldOut(registry, resolved, recipe);
    for (const result of served) expect(result.turns.length).toBeGreaterThan(0);
    expect(served.filter((r) => r.solved).length / 4).toBe(finalEval.result.successRate);
    expect(sumReturns(served) / 4).toBeCloseTo(finalEval.result.meanTeamReturn, 9);

    // The command line: an earlier step without recorded eval metrics is evaluated on the spot.
    const publish = (...flags: string[]) =>
      trainerInProcess(["publish", "--run", "run-1", ...flags, "--store", store.uri]);
    const published = await publish("--step", "0", "--name", "pathfinders", "--tasks", "2");
    expect(published.code).toBe(0);
    const text = published.stdout;
    expect(text).toContain("published pathfinders@2 (run run-1, step 0)");
    expect(text).toContain("eval (evaluated):");
    expect(text).toContain("2 tasks");
    expect((await registry.resolve("pathfinders")).version).toBe(2);
    expect((await registry.resolve("pathfinders", "stable")).version).toBe(1);

    // A step without checkpoints is refused, naming the steps that have them.
    const refused = await publish("--step", "9", "--name", "x");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "publish: run run-1 has no committed step with checkpoints at 9 (steps with checkpoints: 0, 1)",
    );
  }, 180_000);

  it("publishes a run's team before RL (id@warm-start), served as the run measured it before step 0", async () => {
    // A compare's warm-start arm: a cached warm start and no RL step.
    const warmOnly = loadRecipeText(`
name: publish-warm-start
seed: 6
${TINY_PLAN_PATH}
strategy: { name: parallel, groupSize: 2 }
sampling: { temperature: 1, maxTokens: 8 }
sft: { steps: 2, batchSize: 4, mistakeRate: 0 }
train: { steps: 0, tasksPerStep: 2, evalEvery: 0, evalTasks: 4, evalTemperature: 0 }
`);
    const store = new FileStore(join(root, "store-warm-start"));
    const { team } = await trainRun(warmOnly, store, "ws");
    const start = (await new RunStore(store, "ws").readMetrics()).find((r) => r.source === "eval-start")!;

    const publish = (...flags: string[]) => trainerInProcess(["publish", ...flags, "--store", store.uri]);
    const published = await publish("--run", "ws@warm-start", "--name", "before-rl");
    expect(published.stderr).toBe("");
    expect(published.stdout).toContain(
      "published before-rl@1 (run ws@warm-start: its team before RL, supervised step 1)",
    );
    expect(published.stdout).toContain("eval (metrics):");
    const registry = createTeamRegistry(store);
    const manifest = await registry.resolve("before-rl");
    expect(manifest.source).toEqual({ store: store.uri, runId: "ws", step: 1, warmStart: true });
    expect(manifest.eval).toEqual({
      successRate: start.metrics.successRate,
      ci95: [start.metrics.ci95Low, start.metrics.ci95High],
      tasks: 4,
      meanTeamReturn: start.metrics.meanTeamReturn,
    });
    // The weights are the cached warm start's last supervised step, byte for byte.
    const cached = await new RunStore(store, warmStartId(warmOnly, team)).readCheckpoint("planner", 1);
    const served = await registry.readFile(manifest, "planner", "model.safetensors");
    expect(Buffer.from(served).equals(Buffer.from(cached["model.safetensors"]!))).toBe(true);

    // Served with the run's seed, it scores every held-out task as the run's start evaluation did.
    const episodes = await serveHeldOut(registry, manifest, warmOnly);
    expect(episodes.filter((r) => r.solved).length / 4).toBe(start.metrics.successRate);
    expect(sumReturns(episodes) / 4).toBeCloseTo(start.metrics.meanTeamReturn as number, 9);

    // One line for each wrong reference.
    const noStep = await publish("--run", "ws", "--name", "x");
    expect(noStep.stderr).toContain("publish: run ws has no committed step with checkpoints");
    const both = await publish("--run", "ws@warm-start", "--step", "1", "--name", "x");
    expect(both.stderr).toContain("publish: --run ws@warm-start already names the team; drop --step");
    const badRef = await publish("--run", "ws@latest", "--name", "x");
    expect(badRef.stderr).toContain('--run: expected id[@step|@warm-start], got "ws@latest"');
    for (const r of [noStep, both, badRef])
      expect([r.code, r.stderr.trim().split("\n").length]).toEqual([2, 1]);
  }, 180_000);
});
