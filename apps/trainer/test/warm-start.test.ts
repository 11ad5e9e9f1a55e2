/**
 * The warm start runs at its own learning rate and schedule (constant unless `sft.schedule` says
 * otherwise): the recipe's optimizer schedule belongs to the RL phase and is not part of the warm
 * start's cache key, so it must not change the weights.
 */
import { join } from "node:path";
import { sha256Hex, teamPolicies } from "@troupe/core";
import { RunStore } from "@troupe/storage";
import { FileStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { createEngine } from "../src/engines.ts";
import { createEnvironment, recipeTeam } from "../src/envs.ts";
import { loadRecipeText } from "../src/recipe.ts";
import { cachedWarmStart, SFT_STOP_WINDOW, stopThresholds, warmStart } from "../src/run/warm-start.ts";
import { warmStartId, warmStartProgress } from "../src/run/warm-start-cache.ts";
import { quiet, TINY_PLAN_PATH, tempRoot } from "./tiny.ts";

const root = tempRoot("warm-start");
/** The cache id of recipeText("{ lr: 0.001 }"), as computed before sft.schedule existed. */
const WARM_START_ID_BEFORE_SCHEDULE = "sft-64bf9d67d36284fb";

const recipeText = (optimizer: string, sftSchedule = "") => `
name: ws
seed: 3
${TINY_PLAN_PATH}
strategy: { name: atgrpo, candidates: 2 }
optimizer: ${optimizer}
sft: { steps: 3, batchSize: 8, lr: 0.01, mistakeRate: 0.3${sftSchedule} }
`;

async function warmStartWeights(
  optimizer: string,
  folder: string,
  cached = false,
  sftSchedule = "",
): Promise<string> {
  const recipe = loadRecipeText(recipeText(optimizer, sftSchedule));
  const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
  const team = recipeTeam(trainerEnv, recipe.team);
  const engine = await createEngine(recipe, teamPolicies(team));
  try {
    const result = await warmStart({
      recipe,
      trainerEnv,
      team,
      engine,
      store: new FileStore(join(root, folder)),
      reporter: quiet,
    });
    expect(result?.cached).toBe(cached);
    const files = await engine.save(teamPolicies(team)[0]!);
    // RL starts with a fresh optimizer: its schedule counts from RL's first step, not the warm start's.
    const state = files["trainer_state.json"];
    if (state) expect(JSON.parse(new TextDecoder().decode(state)).optimizer_step).toBe(0);
    expect(files["optimizer.safetensors"]).toBeUndefined();
    return sha256Hex(files["model.safetensors"]!);
  } finally {
    await engine.close();
  }
}

describe("warm start", () => {
  it("ignores the RL schedule: cosine with warmup gives the same cache id and the same weights as constant", async () => {
    const constant = "{ lr: 0.001 }";
    const cosine = "{ lr: 0.001, schedule: cosine, warmupSteps: 2, minLrRatio: 0.1 }";
    const a = loadRecipeText(recipeText(constant));
    const b = loadRecipeText(recipeText(cosine));
    const team = recipeTeam(createEnvironment(a.environment.name, a.environment.options), a.team);
    expect(warmStartId(a, team)).toBe(warmStartId(b, team));
    expect(await warmStartWeights(cosine, "cosine")).toBe(await warmStartWeights(constant, "constant"));
  });

  it("decays its own learning rate when sft.schedule is set, under a new cache id", async () => {
    const optimizer = "{ lr: 0.001 }";
    const constant = loadRecipeText(recipeText(optimizer));
    const cosine = loadRecipeText(recipeText(optimizer, ", schedule: cosine, minLrRatio: 0.1"));
    const team = recipeTeam(
      createEnvironment(constant.environment.name, constant.environment.options),
      constant.team,
    );
    // Without the field the key is what it was before the field existed: cached warm starts stay valid.
    expect(constant.sft).not.toHaveProperty("schedule");
    expect(warmStartId(constant, team)).toBe(WARM_START_ID_BEFORE_SCHEDULE);
    expect(warmStartId(cosine, team)).not.toBe(warmStartId(constant, team));
    // Step 0 runs at the full lr either way; steps 1 and 2 run lower under the cosine, so the weights differ.
    const decayed = await warmStartWeights(
      optimizer,
      "sft-cosine",
      false,
      ", schedule: cosine, minLrRatio: 0.1",
    );
    expect(decayed).not.toBe(await warmStartWeights(optimizer, "sft-constant"));
  });

  it("with engine.completionWindow: its own cache id, and the full graphs' NLL to float rounding", async () => {
    const optimizer = "{ lr: 0.001 }";
    const full = loadRecipeText(recipeText(optimizer));
    const windowed = loadRecipeText(recipeText(optimizer), ["engine.completionWindow=true"]);
    const team = recipeTeam(createEnvironment(full.environment.name, full.environment.options), full.team);
    // Off (or absent), the key is what it was before the field existed.
    expect(warmStartId(loadRecipeText(recipeText(optimizer), ["engine.completionWindow=false"]), team)).toBe(
      WARM_START_ID_BEFORE_SCHEDULE,
    );
    expect(warmStartId(windowed, team)).not.toBe(warmStartId(full, team));
    const nll = async (recipe: typeof full, folder: string) => {
      const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
      const engine = await createEngine(recipe, teamPolicies(team));
      try {
        const store = new FileStore(join(root, folder));
        const result = await warmStart({ recipe, trainerEnv, team, engine, store, reporter: quiet });
        return Object.values(result!.finalNll);
      } finally {
        await engine.close();
      }
    };
    const [a] = await nll(full, "window-off");
    const [b] = await nll(windowed, "window-on");
    expect(a).toBeGreaterThan(0.5); // three steps of a fresh model: far from fitted
    expect(b).toBeCloseTo(a!, 4);
  });

  it("refuses sft.mistakeRoles naming a role the team does not have, in one line", async () => {
    const recipe = loadRecipeText(recipeText("{ lr: 0.001 }", ", mistakeRoles: [planer]"));
    const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
    const team = recipeTeam(trainerEnv, recipe.team);
    const engine = await createEngine(recipe, teamPolicies(team));
    try {
      await expect(
        warmStart({
          recipe,
          trainerEnv,
          team,
          engine,
          store: new FileStore(join(root, "bad-role")),
          reporter: quiet,
        }),
      ).rejects.toThrow(/^sft\.mistakeRoles: "planer" is not a role of this team \(planner, fixer\)$/);
    } finally {
      await engine.close();
    }
  });

  it("hands RL the warm-start weights with a fresh optimizer, computed or loaded from the cache", async () => {
    const computed = await warmStartWeights("{ lr: 0.001 }", "fresh");
    expect(await warmStartWeights("{ lr: 0.001 }", "fresh", true)).toBe(computed);
  });

  it("stops when the mean NLL of its last SFT_STOP_WINDOW steps reaches sft.stopAtNll, and is then finished", async () => {
    const store = new FileStore(join(root, "stop"));
    const run = async (stopAtNll: number | string, steps: number) => {
      const recipe = loadRecipeText(
        recipeText("{ lr: 0.001 }").replace(
          "sft: { steps: 3,",
          `sft: { steps: ${steps}, stopAtNll: ${stopAtNll},`,
        ),
      );
      const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
      const team = recipeTeam(trainerEnv, recipe.team);
      const engine = await createEngine(recipe, teamPolicies(team));
      try {
        const notes: string[] = [];
        const result = await warmStart({
          recipe,
          trainerEnv,
          team,
          engine,
          store,
          reporter: { ...quiet, note: (m) => notes.push(m) },
        });
        const runStore = new RunStore(store, warmStartId(recipe, team));
        return {
          result,
          notes,
          runStore,
          recipe,
          team,
          progress: await warmStartProgress(runStore, recipe.sft!),
        };
      } finally {
        await engine.close();
      }
    };
    // Any NLL is below 100: it stops as soon as every policy's window is full (the fixer has a
    // demonstration only where the planner's plan did not solve), long before `steps`.
    const early = await run(100, 40);
    expect(early.result?.cached).toBe(false);
    const last = (await early.runStore.latestCommittedStep())!;
    expect(last).toBeGreaterThanOrEqual(SFT_STOP_WINDOW - 1);
    expect(last).toBeLessThan(39);
    expect(early.progress).toEqual({ latest: last, finished: true });
    expect(early.notes.at(-1)).toBe(
      `warm start: stopped after ${last + 1} steps, the mean nll of the last ${SFT_STOP_WINDOW} at or below 100`,
    );
    // A second run finds it finished (cached), and publish/eval find its last step.
    const again = await run(100, 40);
    expect(again.result?.cached).toBe(true);
    expect((await cachedWarmStart(store, "r", again.recipe, again.team)).step).toBe(last);
    // A threshold no tiny model reaches runs every step (a different cache id: the field is in the key).
    const never = await run(1e-9, SFT_STOP_WINDOW + 2);
    expect(await never.runStore.latestCommittedStep()).toBe(SFT_STOP_WINDOW + 1);
    expect(never.progress).toEqual({ latest: SFT_STOP_WINDOW + 1, finished: true });
    expect(never.runStore.runId).not.toBe(early.runStore.runId);
    // One value per role: a role that never gets low enough keeps the warm start going.
    const perRole = await run("{ planner: 100, fixer: 1e-9 }", SFT_STOP_WINDOW + 4);
    expect(await perRole.runStore.latestCommittedStep()).toBe(SFT_STOP_WINDOW + 3);
    const bothHigh = await run("{ planner: 100, fixer: 50 }", 40);
    expect(bothHigh.notes.at(-1)).toMatch(
      /^warm start: stopped after \d+ steps, the mean nll of the last 10 at or below planner 100, fixer 50$/,
    );
  });

  describe("stopThresholds: sft.stopAtNll as each policy's threshold", () => {
    const teamOf = (specialisation: "shared" | "per-role") => {
      const recipe = loadRecipeText(recipeText("{ lr: 0.001 }"));
      const trainerEnv = createEnvironment(recipe.environment.name, recipe.environment.options);
      return recipeTeam(trainerEnv, { ...recipe.team, specialisation });
    };
    const baseSft = loadRecipeText(recipeText("{ lr: 0.001 }")).sft!;
    const sft = (stopAtNll: number | Record<string, number> | undefined) => ({ ...baseSft, stopAtNll });

    it("gives every policy one number, or each role's own value", () => {
      expect(stopThresholds(sft(undefined), teamOf("per-role"))).toBeUndefined();
      expect([...stopThresholds(sft(0.09), teamOf("per-role"))!]).toEqual([
        ["planner", 0.09],
        ["fixer", 0.09],
      ]);
      expect([...stopThresholds(sft(0.09), teamOf("shared"))!]).toEqual([["shared", 0.09]]);
      expect([...stopThresholds(sft({ fixer: 0.2, planner: 0.05 }), teamOf("per-role"))!]).toEqual([
        ["planner", 0.05],
        ["fixer", 0.2],
      ]);
      expect([...stopThresholds(sft({ planner: 0.1, fixer: 0.1 }), teamOf("shared"))!]).toEqual([
        ["shared", 0.1],
      ]);
    });

    it("refuses an unknown role, a role left out, and two values for one shared policy, with one line", () => {
      expect(() => stopThresholds(sft({ planer: 0.1, fixer: 0.1 }), teamOf("per-role"))).toThrow(
        /^sft\.stopAtNll: "planer" is not a role of this team \(planner, fixer\)$/,
      );
      expect(() => stopThresholds(sft({ planner: 0.1 }), teamOf("per-role"))).toThrow(
        /^sft\.stopAtNll: no value for the role "fixer" \(give every role one, or one number\)$/,
      );
      expect(() => stopThresholds(sft({ planner: 0.1, fixer: 0.2 }), teamOf("shared"))).toThrow(
        /^sft\.stopAtNll: the roles of the policy "shared" share its NLL and need one value \(got 0\.1 and 0\.2\)$/,
      );
    });

    it("parses a per-role map from YAML and refuses a threshold of 0", () => {
      const text = recipeText("{ lr: 0.001 }").replace(
        "sft: { steps: 3,",
        "sft: { steps: 3, stopAtNll: { planner: 0.05, fixer: 0.2 },",
      );
      expect(loadRecipeText(text).sft?.stopAtNll).toEqual({ planner: 0.05, fixer: 0.2 });
      expect(() => loadRecipeText(text.replace("fixer: 0.2", "fixer: 0"))).toThrow(/stopAtNll/);
    });
  });
});
