/**
 * Train → publish → resolve → serve: a tiny real ONNX team trained on Plan-Path into a FileStore,
 * published from its newest step, then solved through @troupe/teams. Served with the run's seed
 * and the evaluation sampling, every held-out task comes out exactly as the trainer's evaluation
 * scored it (same prompts, same seeds, same weights).
 */
import { join } from "node:path";
import { teamPolicies } from "@troupe/core";
import { FileStore, RunStore } from "@troupe/storage/node";
import { createTeamRegistry, loadTeam, solve } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { describe, expect, it } from "vitest";
import { createEngine } from "../src/engines.ts";
import { createEnvironment, recipeTeam } from "../src/envs.ts";
import { publishRun } from "../src/publish.ts";
import { loadRecipeText } from "../src/recipe.ts";
import { evalTasks, train } from "../src/train.ts";
import { quiet, TINY_PLAN_PATH, tempRoot, trainerInProcess } from "./tiny.ts";

const root = tempRoot("publish");

const recipe = loadRecipeText(`
name: publish-e2e
seed: 5
${TINY_PLAN_PATH}
strategy: { name: parallel, groupSize: 2 }
sampling: { temperature: 1, maxTokens: 8 }
train: { steps: 2, tasksPerStep: 2, evalEvery: 0, evalTasks: 4, evalTemperature: 0, checkpointEvery: 1 }
`);

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
    const backend = createOnnxBackend();
    const loaded = await loadTeam(registry, resolved, backend);
    let successes = 0;
    let teamReturn = 0;
    for (const task of evalTasks(trainerEnv, recipe)) {
      const result = await solve(loaded, { task }, { sampling: { seed: recipe.seed } });
      expect(result.turns.length).toBeGreaterThan(0);
      if (result.solved) successes++;
      teamReturn += result.teamReturn;
    }
    await backend.close();
    expect(successes / 4).toBe(finalEval.result.successRate);
    expect(teamReturn / 4).toBeCloseTo(finalEval.result.meanTeamReturn, 9);

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
});
