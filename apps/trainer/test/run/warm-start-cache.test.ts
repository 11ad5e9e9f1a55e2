/**
 * The warm start's cache key (warm-start-cache.ts): stable for a fixed recipe (the exact id below
 * is the contract with every store that holds a warm start), changed by each field that changes
 * what the warm start learns, unchanged by the others and by writing a default out. Warm starts
 * cached under the version-1 key are still found.
 */
import { join } from "node:path";
import { RunStore } from "@troupe/storage";
import { FileStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { recipeEnvironment } from "../../src/envs.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import {
  legacyWarmStartId,
  WARM_START_KEY_VERSION,
  warmStartId,
  warmStartKey,
  warmStartRun,
} from "../../src/run/warm-start-cache.ts";
import { TINY_PLAN_PATH, tempRoot, withWarmStart } from "../tiny.ts";

const root = tempRoot("warm-start-cache");

const RECIPE = `
name: ws
seed: 3
${TINY_PLAN_PATH}
strategy: { name: atgrpo, candidates: 2 }
optimizer: { lr: 0.001 }
sft: { steps: 3, batchSize: 8, lr: 0.01, mistakeRate: 0.3 }
`;
/** The id of RECIPE under key version 2. */
const ID = "sft-e82bbbc38de6c677";
/** The id of RECIPE as the version-1 key (whole sections hashed) gave it. */
const ID_VERSION_1 = "sft-64bf9d67d36284fb";

const idOf = (overrides: readonly string[] = []) => {
  const recipe = loadRecipeText(RECIPE, overrides);
  return warmStartId(recipe, recipeEnvironment(recipe).team);
};

describe("warmStartKey", () => {
  it("is stable for a fixed recipe, and names its version", () => {
    expect(idOf()).toBe(ID);
    const recipe = loadRecipeText(RECIPE);
    expect(warmStartKey(recipe, recipeEnvironment(recipe).team).version).toBe(WARM_START_KEY_VERSION);
  });

  it("changes with every field that changes what the warm start learns", () => {
    const learning = [
      "seed=4",
      "model.hidden_size=48",
      "engine.completionWindow=true",
      "environment.options.rows=5",
      "team.specialisation=shared",
      "sft.steps=4",
      "sft.batchSize=16",
      "sft.lr=0.02",
      "sft.schedule=wsd",
      "sft.warmupSteps=2",
      "sft.minLrRatio=0.2",
      "sft.decayFraction=0.5",
      "sft.mistakeRate=0.1",
      "sft.mistakeRoles=[fixer]",
      "sft.environmentOptions={minPathLength: 3}",
      "sft.cut={rate: 0.5, length: 2}",
      "sft.stopAtNll=0.1",
      "optimizer.beta2=0.99",
      "optimizer.weightDecay=0.1",
      "optimizer.maxGradNorm=0.5",
    ];
    const ids = learning.map((set) => idOf([set]));
    for (const [i, id] of ids.entries()) expect(id, learning[i]).not.toBe(ID);
    expect(new Set(ids).size).toBe(learning.length);
  });

  it("stays the same when a field that does not change it changes, or a default is written out", () => {
    const notLearning = [
      "train.evalEvery=3",
      "train.steps=7",
      "train.microBatchSize=4",
      "strategy.candidates=4",
      "loss.klCoef=0.1",
      "optimizer.lr=0.01",
      "optimizer.schedule=cosine",
      "optimizer.warmupSteps=5",
      "memoryBudget=3GiB",
      "engine.memoryArena=true",
      "sampling.temperature=0.5",
      "advantage.baseline=rloo",
      "name=other",
      "environment.options.rewards={stepCost: 0.5}",
      // defaults written out
      "sft.schedule=constant",
      "sft.warmupSteps=0",
      "sft.minLrRatio=0.1",
      "sft.decayFraction=0.2",
      "engine.completionWindow=false",
      "model.model_type=qwen3",
    ];
    for (const set of notLearning) expect(idOf([set]), set).toBe(ID);
  });
});

describe("warm starts cached under the version-1 key", () => {
  it("keep their id from before version 2", () => {
    const recipe = loadRecipeText(RECIPE);
    expect(legacyWarmStartId(recipe, recipeEnvironment(recipe).team)).toBe(ID_VERSION_1);
  });

  it("are found and loaded, with one line saying so; without one the current key's run is trained", async () => {
    const recipe = loadRecipeText(RECIPE);
    const { team } = recipeEnvironment(recipe);
    const store = new FileStore(join(root, "legacy"));
    expect((await warmStartRun(store, recipe, team)).found).toBe("none");
    // A warm start trained as before version 2: the same weights under the old id.
    const trained = await withWarmStart(recipe, store, ({ result }) => result);
    expect(trained?.runId).toBe(ID);
    const current = new RunStore(store, ID);
    const legacy = new RunStore(store, ID_VERSION_1);
    for (const { key } of await store.list(`runs/${ID}/`)) {
      await store.put(key.replace(`runs/${ID}/`, `runs/${ID_VERSION_1}/`), await store.get(key));
      await store.delete(key);
    }
    expect(await current.latestCommittedStep()).toBeUndefined();
    expect(await legacy.latestCommittedStep()).toBe(2);
    expect((await warmStartRun(store, recipe, team)).found).toBe("version 1");
    const loaded = await withWarmStart(recipe, store, (warm) => warm);
    expect(loaded.result).toMatchObject({ runId: ID_VERSION_1, cached: true });
    expect(loaded.notes[0]).toBe(
      `warm start: ${ID_VERSION_1}, cached under the cache key's version 1, is the same warm start`,
    );
    expect(await store.head(`runs/${ID}/config.json`)).toBeUndefined();
  });
});
