/**
 * The warm start (warm-start.ts): its own learning rate and schedule (the recipe's optimizer
 * schedule belongs to the RL phase, is not part of the cache key, and must not change the
 * weights), the cache it is kept in, its early stop, and the checks of its settings. The cache
 * key itself is warm-start-cache.test.ts's.
 */
import { join } from "node:path";
import { sha256Hex, teamPolicies } from "@troupe/core";
import { checkpointFolder, type ObjectStore, RunStore, stepFolder } from "@troupe/storage";
import { FileStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { createEnvironment, recipeEnvironment, recipeTeam } from "../../src/envs.ts";
import { loadRecipeText, RecipeError, SftSchema } from "../../src/recipe.ts";
import {
  cachedWarmStart,
  checkDemonstrationRoles,
  demonstrationEnvironment,
  SFT_STOP_WINDOW,
  stopThresholds,
  warmStartLr,
} from "../../src/run/warm-start.ts";
import { warmStartId, warmStartProgress } from "../../src/run/warm-start-cache.ts";
import { racedStore, TINY_PLAN_PATH, tempRoot, withWarmStart } from "../tiny.ts";

const sft = SftSchema.parse({ steps: 10, batchSize: 8, lr: 1, mistakeRate: 0 });
const lrs = (extra: object) => Array.from({ length: 10 }, (_, s) => warmStartLr(s, { ...sft, ...extra }));

describe("warmStartLr", () => {
  it("is constant when no schedule is given", () => {
    expect(lrs({})).toEqual(Array(10).fill(1));
  });

  it("wsd holds the rate, then decays linearly to the floor over the last decayFraction of the steps", () => {
    expect(lrs({ schedule: "wsd", decayFraction: 0.2, minLrRatio: 0.1 })).toEqual([
      1, 1, 1, 1, 1, 1, 1, 1, 0.55, 0.1,
    ]);
    // Default fraction 0.2 and floor 0.1.
    expect(lrs({ schedule: "wsd" })).toEqual(lrs({ schedule: "wsd", decayFraction: 0.2, minLrRatio: 0.1 }));
    const half = lrs({ schedule: "wsd", decayFraction: 0.5, minLrRatio: 0 });
    expect(half.slice(0, 5)).toEqual([1, 1, 1, 1, 1]);
    expect(half.slice(5).map((x) => +x.toFixed(12))).toEqual([0.8, 0.6, 0.4, 0.2, 0]);
  });

  it("cosine and linear decay from the first step, as the RL schedules do", () => {
    const cosine = lrs({ schedule: "cosine", minLrRatio: 0.1 });
    expect(cosine[0]).toBe(1);
    expect(cosine[5]).toBeCloseTo(0.55, 12);
    expect(lrs({ schedule: "linear", minLrRatio: 0 }).map((x) => +x.toFixed(12))).toEqual([
      1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1,
    ]);
  });

  it("warms up linearly over the first warmupSteps, on top of the schedule", () => {
    expect(lrs({ warmupSteps: 4 })).toEqual([0.25, 0.5, 0.75, 1, 1, 1, 1, 1, 1, 1]);
    expect(lrs({ warmupSteps: 0 })).toEqual(lrs({}));
    const linear = lrs({ schedule: "linear", minLrRatio: 0, warmupSteps: 2 }).map((x) => +x.toFixed(12));
    expect(linear).toEqual([0.5, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]);
  });
});

describe("demonstrationEnvironment", () => {
  const recipe = (sft: string) =>
    loadRecipeText(`
name: short-demos
environment:
  name: plan-path
  options: { roles: tool-call, maxTurns: 2, rows: 6, cols: 6, minPathLength: 3 }
strategy: { name: atgrpo }
sft: ${sft}
`);

  it("draws the demonstrations' tasks with sft.environmentOptions in place of the recipe's", () => {
    const r = recipe("{ steps: 10, environmentOptions: { maxPathLength: 4 } }");
    const { trainerEnv, team } = recipeEnvironment(r);
    const demoEnv = demonstrationEnvironment(r, trainerEnv);
    const lengths = (env: typeof trainerEnv) =>
      new Set(env.generateTasks("train", 100, 3).map((t) => (t.payload as { optimal: number }).optimal));
    expect([...lengths(demoEnv)].sort()).toEqual([3, 4]);
    expect(Math.max(...lengths(trainerEnv))).toBeGreaterThan(4);
    // Without the field the recipe's own environment, and the cache id, are used.
    const plain = recipe("{ steps: 10 }");
    expect(demonstrationEnvironment(plain, trainerEnv)).toBe(trainerEnv);
    expect(warmStartId(r, team)).not.toBe(warmStartId(plain, team));
  });

  it("names the field when an option is bad", () => {
    const r = recipe("{ steps: 10, environmentOptions: { maxPathLength: 0 } }");
    const { trainerEnv } = recipeEnvironment(r);
    expect(() => demonstrationEnvironment(r, trainerEnv)).toThrow(RecipeError);
    expect(() => demonstrationEnvironment(r, trainerEnv)).toThrow(
      /^sft\.environmentOptions: .*maxPathLength/,
    );
    const roles = recipe("{ steps: 10, environmentOptions: { roles: compact } }");
    expect(() => demonstrationEnvironment(roles, trainerEnv)).toThrow(
      "sft.environmentOptions: roles cannot differ from the recipe's (the team is the same)",
    );
  });

  it("checks the roles that slips and cuts name, in one line", () => {
    const r = recipe("{ steps: 10, mistakeRoles: [plan], cut: { rate: 0.5, length: 2, roles: [plan] } }");
    const { team } = recipeEnvironment(r);
    expect(() => checkDemonstrationRoles(r.sft!, team)).not.toThrow();
    const cut = recipe("{ steps: 10, cut: { rate: 0.5, length: 2, roles: [planner] } }");
    expect(() => checkDemonstrationRoles(cut.sft!, team)).toThrow(
      'sft.cut.roles: "planner" is not a role of this team (tool, plan)',
    );
    const slips = recipe("{ steps: 10, mistakeRoles: [fixer] }");
    expect(() => checkDemonstrationRoles(slips.sft!, team)).toThrow(RecipeError);
    // A cut is part of what the warm start learns from, so of its cache id.
    expect(warmStartId(cut, team)).not.toBe(warmStartId(recipe("{ steps: 10 }"), team));
  });
});

const root = tempRoot("warm-start");

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
  return withWarmStart(recipe, new FileStore(join(root, folder)), async ({ result, engine, team }) => {
    expect(result?.cached).toBe(cached);
    const files = await engine.save(teamPolicies(team)[0]!);
    // RL starts with a fresh optimizer: its schedule counts from RL's first step, not the warm start's.
    const state = files["trainer_state.json"];
    if (state) expect(JSON.parse(new TextDecoder().decode(state)).optimizer_step).toBe(0);
    expect(files["optimizer.safetensors"]).toBeUndefined();
    return sha256Hex(files["model.safetensors"]!);
  });
}

describe("warm start", () => {
  it("ignores the RL schedule: cosine with warmup gives the same cache id and the same weights as constant", async () => {
    const constant = "{ lr: 0.001 }";
    const cosine = "{ lr: 0.001, schedule: cosine, warmupSteps: 2, minLrRatio: 0.1 }";
    const a = loadRecipeText(recipeText(constant));
    const b = loadRecipeText(recipeText(cosine));
    const { team } = recipeEnvironment(a);
    expect(warmStartId(a, team)).toBe(warmStartId(b, team));
    expect(await warmStartWeights(cosine, "cosine")).toBe(await warmStartWeights(constant, "constant"));
  });

  it("decays its own learning rate when sft.schedule is set, under a new cache id", async () => {
    const optimizer = "{ lr: 0.001 }";
    const constant = loadRecipeText(recipeText(optimizer));
    const cosine = loadRecipeText(recipeText(optimizer, ", schedule: cosine, minLrRatio: 0.1"));
    const { team } = recipeEnvironment(constant);
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
    const { team } = recipeEnvironment(full);
    expect(warmStartId(windowed, team)).not.toBe(warmStartId(full, team));
    const nll = (recipe: typeof full, folder: string) =>
      withWarmStart(recipe, new FileStore(join(root, folder)), ({ result }) =>
        Object.values(result!.finalNll),
      );
    const [a] = await nll(full, "window-off");
    const [b] = await nll(windowed, "window-on");
    expect(a).toBeGreaterThan(0.5); // three steps of a fresh model: far from fitted
    expect(b).toBeCloseTo(a!, 4);
  });

  it("refuses sft.mistakeRoles naming a role the team does not have, in one line", async () => {
    const recipe = loadRecipeText(recipeText("{ lr: 0.001 }", ", mistakeRoles: [planer]"));
    await expect(withWarmStart(recipe, new FileStore(join(root, "bad-role")), () => {})).rejects.toThrow(
      /^sft\.mistakeRoles: "planer" is not a role of this team \(planner, fixer\)$/,
    );
  });

  it("stops after a committed step when asked (a signal), and goes on from there to the same weights", async () => {
    const recipe = loadRecipeText(recipeText("{ lr: 0.001 }"));
    const store = new FileStore(join(root, "asked-to-stop"));
    let asked = 0;
    const stopped = await withWarmStart(
      recipe,
      store,
      async ({ result, notes, team }) => ({
        result,
        notes,
        progress: await warmStartProgress(new RunStore(store, warmStartId(recipe, team)), recipe.sft!),
      }),
      () => ++asked >= 2,
    );
    expect(stopped.result?.stopped).toBe(true);
    expect(stopped.notes.at(-1)).toBe("warm start: stopped after committing its step 2/3");
    expect(stopped.progress).toEqual({ latest: 1, finished: false });
    const nll = (folder: FileStore) =>
      withWarmStart(recipe, folder, ({ result }) => [result!.finalNll, result!.stopped ?? false]);
    expect(await nll(store)).toEqual(await nll(new FileStore(join(root, "never-stopped"))));
  });

  it("goes on from a step another process committed first (a shared cache), to the same weights", async () => {
    const recipe = loadRecipeText(recipeText("{ lr: 0.001 }"));
    const id = warmStartId(recipe, recipeEnvironment(recipe).team);
    const train = (store: ObjectStore) =>
      withWarmStart(recipe, store, async ({ result, notes, engine, team }) => ({
        notes,
        finalNll: result!.finalNll,
        weights: sha256Hex((await engine.save(teamPolicies(team)[0]!))["model.safetensors"]!),
      }));
    const alone = await train(new FileStore(join(root, "alone")));
    expect(alone.notes.some((n) => n.includes("another process"))).toBe(false);
    // The other process committed step 2 itself, or the first policy's checkpoint of it.
    const [first] = teamPolicies(recipeEnvironment(recipe).team);
    for (const [folder, key] of [
      ["raced-step", `${stepFolder(id, 1)}/manifest.json`],
      ["raced-checkpoint", `${checkpointFolder(id, first!, 1)}/manifest.json`],
    ] as const) {
      const raced = await train(racedStore(new FileStore(join(root, folder)), key));
      expect(raced.notes, key).toContain(
        `warm start: another process committed step 2 of ${id} first; going on from its checkpoint`,
      );
      expect([raced.finalNll, raced.weights], key).toEqual([alone.finalNll, alone.weights]);
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
      return withWarmStart(recipe, store, async ({ result, notes, team }) => {
        const runStore = new RunStore(store, warmStartId(recipe, team));
        return {
          result,
          notes,
          runStore,
          recipe,
          team,
          progress: await warmStartProgress(runStore, recipe.sft!),
        };
      });
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
