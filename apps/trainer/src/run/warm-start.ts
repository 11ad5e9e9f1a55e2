/**
 * `trainer:sft` and the warm start of `trainer:train`: supervised steps on solver demonstrations
 * (see sft.ts), stored as a run of its own under a cache id derived from everything that
 * determines its result. A second run with the same model, environment, team and SFT settings
 * loads the finished warm start instead of recomputing it; an interrupted one resumes.
 */
import { deriveSeed, mean, type PolicyId, type Team, teamPolicies } from "@troupe/core";
import { defaultOptimizerConfig, type Engine, learningRate } from "@troupe/engine";
import type { ObjectStore, RunStore } from "@troupe/storage";
import { recipeEnvironment, type TrainerEnvironment } from "../envs.ts";
import { type Recipe, RecipeError, type SftRecipe } from "../recipe.ts";
import { restoreStep } from "./checkpoints.ts";
import type { RunContext } from "./context.ts";
import { faultPoint } from "./faults.ts";
import { collectDemonstrations, sftStep } from "./sft.ts";
import { microBatching, type TrainOptions, type TrainSummary, train } from "./train.ts";
import { warmStartKey, warmStartProgress, warmStartRun } from "./warm-start-cache.ts";

/**
 * The warm start's learning rate at its 0-based step s of S, with η = sft.lr, floor r = minLrRatio
 * and the schedule's progress π:
 *   constant                      η
 *   cosine, linear                as the RL optimizer's schedules (learningRate), π = s / S
 *   wsd (warmup-stable-decay)     η for s < D = round((1 − f)·S), f = decayFraction,
 *                                 then η · (r + (1 − r)(1 − π)), π = (s − D + 1) / (S − D)
 * Why wsd: imitation learns copying in a jump whose step depends on the seed (a few hundred steps
 * on the tool-call team); a decay from the first step slows the late jumpers until they miss it,
 * while a constant rate ends wherever its noise leaves the weights. Holding the rate and decaying
 * only at the end does both: every seed jumps, and the last steps settle.
 * With sft.warmupSteps = W the step s < W runs at (s + 1)/W of the scheduled rate. Why: AdamW
 * moves every weight by about η a step whatever its gradient, so at the full rate from step 0 the
 * first steps throw the freshly initialised attention far from where it started before the
 * gradients mean anything; a linear warm-up is the usual cure.
 */
export function warmStartLr(step: number, sft: SftRecipe): number {
  const warmup = sft.warmupSteps;
  const scheduled = scheduledWarmStartLr(step, sft);
  return step < warmup ? (scheduled * (step + 1)) / warmup : scheduled;
}

function scheduledWarmStartLr(step: number, sft: SftRecipe): number {
  const schedule = sft.schedule;
  if (schedule === "constant") return sft.lr;
  // The decays are the RL optimizer's (learningRate); wsd runs its linear one over the last steps.
  const decay = (s: number, totalSteps: number) =>
    learningRate(s, {
      ...defaultOptimizerConfig,
      lr: sft.lr,
      schedule: schedule === "wsd" ? "linear" : schedule,
      warmupSteps: 0,
      minLrRatio: sft.minLrRatio,
      totalSteps,
    });
  if (schedule !== "wsd") return decay(step, sft.steps);
  const stable = Math.round((1 - sft.decayFraction) * sft.steps);
  return step < stable ? sft.lr : decay(step - stable + 1, sft.steps - stable);
}

/** Supervised steps whose mean NLL `sft.stopAtNll` compares (enough to average out batch noise). */
export const SFT_STOP_WINDOW = 10;

/** The `id@warm-start` suffix of a run reference: the run's team before RL. */
export const WARM_START_REF = "warm-start";

/**
 * A run reference as the commands take it: `id`, `id@step` or `id@warm-start` →
 * [id, step | "warm-start" | undefined (the newest committed step)].
 */
export function parseRunRef(text: string): [string, number | typeof WARM_START_REF | undefined] {
  const at = text.lastIndexOf("@");
  if (at < 0) return [text, undefined];
  const ref = text.slice(at + 1);
  if (ref === WARM_START_REF) return [text.slice(0, at), WARM_START_REF];
  const step = Number(ref);
  if (ref === "" || !Number.isInteger(step) || step < 0)
    throw new RecipeError(`--run: expected id[@step|@${WARM_START_REF}], got "${text}"`);
  return [text.slice(0, at), step];
}

/**
 * Where the team a run started RL from is kept: the warm start its recipe trained first (the cache
 * run of warmStartId) at its last supervised step. One RecipeError line when the recipe has none or
 * the cache is not finished in this store.
 */
export async function cachedWarmStart(
  store: ObjectStore,
  runId: string,
  recipe: Recipe,
  team: Team,
): Promise<{ readonly runStore: RunStore; readonly step: number }> {
  const sft = recipe.sft;
  if (sft === undefined || sft.steps === 0)
    throw new RecipeError(`run ${runId}: its recipe has no warm start`);
  const { runStore } = await warmStartRun(store, recipe, team);
  const { latest, finished } = await warmStartProgress(runStore, sft);
  if (!finished || latest === undefined) {
    throw new RecipeError(
      `run ${runId}: its warm start ${runStore.runId} is not finished in this store (` +
        (latest === undefined ? "no supervised step" : `supervised step ${latest + 1} of ${sft.steps}`) +
        ")",
    );
  }
  return { runStore, step: latest };
}

export interface WarmStartResult {
  readonly runId: string;
  readonly cached: boolean;
  readonly finalNll: Record<string, number>;
  /** `stopRequested` stopped it after a committed step; the next call goes on from there. */
  readonly stopped?: boolean;
}

/**
 * Step `step` of a warm start: its checkpoints, metrics and commit (`final` when it stops there).
 * A warm start is a cache that runs of the same recipe share, so two processes may train the same
 * one at once (compare arms side by side): where the other committed first, its step is the one
 * that counts and this process goes on from its checkpoints, as a resume would (the same seed and
 * data give the same weights; whatever differs, the engine and the store agree again). Returns
 * whether the stored step is final.
 */
async function commitWarmStartStep(
  context: RunContext,
  runStore: RunStore,
  step: number,
  final: boolean,
  metrics: Record<string, number>,
): Promise<boolean> {
  const { engine, team, reporter } = context;
  let lost = false;
  for (const policyId of teamPolicies(team)) {
    lost = !(await runStore.writeCheckpoint(policyId, step, await engine.save(policyId))).committed || lost;
  }
  // The metrics row is a plain put: the process that lost a checkpoint leaves it to the other.
  if (!lost) await runStore.writeMetrics(step, metrics);
  const commit = await runStore.commitStep(step, new Map(), {
    kind: "sft",
    ...(final ? { final: true } : {}),
  });
  if (lost || !commit.committed) {
    await restoreStep(engine, runStore, team, step);
    reporter.note(
      `warm start: another process committed step ${step + 1} of ${runStore.runId} first; going on from its checkpoint`,
    );
  }
  return commit.manifest.meta.final === true;
}

/**
 * Trains (or loads from the store's cache) the recipe's warm start into the context's engine;
 * undefined when the recipe has none.
 */
export async function warmStart(context: RunContext): Promise<WarmStartResult | undefined> {
  const { recipe, trainerEnv, team, engine, store, reporter } = context;
  const sft = recipe.sft;
  if (!sft || sft.steps === 0) return undefined;
  const { stopAt, demoEnv } = checkWarmStart(recipe, trainerEnv, team)!;
  const { runStore, found } = await warmStartRun(store, recipe, team);
  if (found === "current" || found === "none")
    await runStore.writeConfig({ kind: "sft", ...warmStartKey(recipe, team) });
  else
    reporter.note(
      `warm start: ${runStore.runId}, cached under the cache key's version 1, is the same warm start`,
    );
  const { latest, finished } = await warmStartProgress(runStore, sft);
  if (latest !== undefined) await restoreStep(engine, runStore, team, latest);
  if (finished) {
    reporter.note(`warm start: loaded cached ${runStore.runId} (${latest! + 1} supervised steps)`);
    await freshOptimizer(engine, team);
    return { runId: runStore.runId, cached: true, finalNll: {} };
  }
  // The warm start has its own learning rate and schedule: the recipe's optimizer schedule, warmup
  // and floor are the RL phase's (and are not part of the cache key). Each step gets its rate as a
  // constant (warmStartLr); the engine keeps the AdamW moments and step count when only lr changes.
  const optimizerAt = (step: number) => ({
    ...recipe.optimizer,
    lr: warmStartLr(step, sft),
    schedule: "constant" as const,
    warmupSteps: 0,
    minLrRatio: 0,
    totalSteps: sft.steps,
  });
  // Enough episodes per step to fill the batch: an episode gives one demonstration per role turn.
  const tasksPerStep = Math.max(1, Math.ceil(sft.batchSize / team.roles.length));
  let finalNll: Record<string, number> = {};
  // Each policy's NLL of the last SFT_STOP_WINDOW steps (refilled from the metrics on a resume).
  const recent = new Map<string, number[]>();
  const remember = (policyId: string, nll: number) => {
    const list = recent.get(policyId) ?? [];
    list.push(nll);
    if (list.length > SFT_STOP_WINDOW) list.shift();
    recent.set(policyId, list);
  };
  if (sft.stopAtNll !== undefined && latest !== undefined) {
    const rows = (await runStore.readMetrics({ committedOnly: true })).sort((a, b) => a.step - b.step);
    for (const row of rows) {
      for (const policyId of teamPolicies(team)) {
        const nll = row.metrics[`${policyId}/nll`];
        if (typeof nll === "number") remember(policyId, nll);
      }
    }
  }
  const goodEnough = () =>
    stopAt !== undefined &&
    [...stopAt].every(([policyId, threshold]) => {
      const list = recent.get(policyId) ?? [];
      return list.length === SFT_STOP_WINDOW && mean(list) <= threshold;
    });
  const started = performance.now();
  for (let step = (latest ?? -1) + 1; step < sft.steps; step++) {
    const tasks = demoEnv.generateTasks("train", tasksPerStep, deriveSeed(recipe.seed, "sft-tasks", step));
    const demos = await collectDemonstrations(demoEnv, team, tasks, {
      mistakeRate: sft.mistakeRate,
      mistakeRoles: sft.mistakeRoles,
      cut: sft.cut,
      seed: deriveSeed(recipe.seed, "sft", step),
    });
    const metrics = await sftStep(engine, demos, optimizerAt(step), microBatching(recipe));
    finalNll = Object.fromEntries([...metrics].map(([id, m]) => [id, m.nll]));
    for (const [policyId, m] of metrics) remember(policyId, m.nll);
    const stop = await commitWarmStartStep(context, runStore, step, goodEnough(), {
      demonstrations: demos.length,
      ...Object.fromEntries(
        [...metrics].flatMap(([id, m]) => [
          [`${id}/nll`, m.nll],
          [`${id}/gradNorm`, m.train.gradNorm],
        ]),
      ),
    });
    // Only the newest warm-start checkpoint is ever read (to resume, or as the cached result).
    await runStore.pruneCheckpoints(step, { keepEvery: sft.steps });
    faultPoint("sft-after-step", step);
    if ((step + 1) % 10 === 0 || step === sft.steps - 1 || stop) {
      const elapsed = (performance.now() - started) / 1000;
      reporter.note(
        `warm start ${step + 1}/${sft.steps}: nll ${Object.entries(finalNll)
          .map(([id, v]) => `${id} ${v.toFixed(3)}`)
          .join(", ")} (${elapsed.toFixed(0)} s)`,
      );
    }
    if (stop) {
      reporter.note(
        `warm start: stopped after ${step + 1} steps, the mean nll of the last ${SFT_STOP_WINDOW} at or below ${describeThresholds(stopAt!)}`,
      );
      break;
    }
    if (step < sft.steps - 1 && context.stopRequested?.()) {
      reporter.note(`warm start: stopped after committing its step ${step + 1}/${sft.steps}`);
      return { runId: runStore.runId, cached: false, finalNll, stopped: true };
    }
  }
  await freshOptimizer(engine, team);
  return { runId: runStore.runId, cached: false, finalNll };
}

/**
 * The warm start's settings checked against the team and environment before anything is written
 * (one RecipeError line if not): the roles its slips, cuts and thresholds name, and the
 * environment of `sft.environmentOptions`. Undefined when the recipe has no warm start.
 */
export function checkWarmStart(
  recipe: Recipe,
  trainerEnv: TrainerEnvironment,
  team: Team,
): { stopAt: Map<PolicyId, number> | undefined; demoEnv: TrainerEnvironment } | undefined {
  const sft = recipe.sft;
  if (!sft || sft.steps === 0) return undefined;
  checkDemonstrationRoles(sft, team);
  return { stopAt: stopThresholds(sft, team), demoEnv: demonstrationEnvironment(recipe, trainerEnv) };
}

/** The roles the warm start's slips and cuts name must be the team's (one RecipeError line if not). */
export function checkDemonstrationRoles(sft: SftRecipe, team: Team): void {
  checkRoleNames("sft.mistakeRoles", sft.mistakeRoles, team);
  checkRoleNames("sft.cut.roles", sft.cut?.roles, team);
}

/** Every name in `roles` (when given) must be a role of the team: one RecipeError line naming `field` if not. */
function checkRoleNames(field: string, roles: readonly string[] | undefined, team: Team): void {
  const roleIds = team.roles.map((r) => r.id);
  const unknownRole = roles?.find((id) => !roleIds.includes(id));
  if (unknownRole !== undefined)
    throw new RecipeError(`${field}: "${unknownRole}" is not a role of this team (${roleIds.join(", ")})`);
}

/**
 * `sft.stopAtNll` as each policy's threshold (undefined when absent). A number holds for every
 * policy; a map names every role once, and roles that share a policy must agree (they share its
 * NLL) — one RecipeError line otherwise.
 */
export function stopThresholds(sft: SftRecipe, team: Team): Map<PolicyId, number> | undefined {
  const stopAtNll = sft.stopAtNll;
  if (stopAtNll === undefined) return undefined;
  if (typeof stopAtNll === "number") return new Map(teamPolicies(team).map((id) => [id, stopAtNll]));
  checkRoleNames("sft.stopAtNll", Object.keys(stopAtNll), team);
  const thresholds = new Map<PolicyId, number>();
  for (const role of team.roles) {
    const value = stopAtNll[role.id];
    if (value === undefined)
      throw new RecipeError(
        `sft.stopAtNll: no value for the role "${role.id}" (give every role one, or one number)`,
      );
    const shared = thresholds.get(role.policy);
    if (shared !== undefined && shared !== value)
      throw new RecipeError(
        `sft.stopAtNll: the roles of the policy "${role.policy}" share its NLL and need one value (got ${shared} and ${value})`,
      );
    thresholds.set(role.policy, value);
  }
  return thresholds;
}

/** `0.09`, or `tool 0.05, plan 0.2` where the policies' thresholds differ. */
function describeThresholds(thresholds: ReadonlyMap<PolicyId, number>): string {
  const values = new Set(thresholds.values());
  if (values.size === 1) return String([...values][0]);
  return [...thresholds].map(([id, v]) => `${id} ${v}`).join(", ");
}

/**
 * The environment the demonstrations come from: the recipe's, or with sft.environmentOptions in
 * place of some of its options (the same game and roles, other tasks). Held-out tasks are never
 * among them: the splits are decided by each task's own hash, whatever the options.
 */
export function demonstrationEnvironment(recipe: Recipe, trainerEnv: TrainerEnvironment): TrainerEnvironment {
  const overrides = recipe.sft?.environmentOptions;
  if (overrides === undefined) return trainerEnv;
  // The demonstrations are the recipe's team's turns: its roles and turn budget stay.
  const fixed = ["roles", "maxTurns"].find((key) => key in overrides);
  if (fixed !== undefined)
    throw new RecipeError(
      `sft.environmentOptions: ${fixed} cannot differ from the recipe's (the team is the same)`,
    );
  try {
    return recipeEnvironment({
      ...recipe,
      environment: { ...recipe.environment, options: { ...recipe.environment.options, ...overrides } },
    }).trainerEnv;
  } catch (error) {
    throw new RecipeError(`sft.environmentOptions: ${(error as Error).message.replace(/^recipe: /, "")}`);
  }
}

/**
 * A run from where it stands: the recipe's warm start (cached in the store) when the run has no
 * committed step yet, then train(), which continues after the newest committed step.
 */
export async function warmStartAndTrain(options: TrainOptions): Promise<TrainSummary> {
  const { recipe, trainerEnv, team, engine, runStore, reporter, stopRequested } = options;
  if ((await runStore.latestCommittedStep()) === undefined) {
    const started = await warmStart({
      recipe,
      trainerEnv,
      team,
      engine,
      store: runStore.store,
      reporter,
      // Asked with −1: before RL step 0.
      ...(stopRequested ? { stopRequested: () => stopRequested(-1) } : {}),
    });
    if (started?.stopped) {
      // The warm start is committed step by step in its own cached run; a resume goes on from it.
      return {
        runId: runStore.runId,
        firstStep: 0,
        lastCommittedStep: undefined,
        stoppedEarly: true,
        evals: [],
        storageWaitMs: 0,
      };
    }
  }
  return train(options);
}

/**
 * RL starts from the warm-start weights with a fresh AdamW (step 0, zero moments), as an RL trainer
 * started from an SFT checkpoint does. Carrying the warm start's optimizer over would start the RL
 * schedule at the warm start's step count (a 150-step cosine after 25 warm-start steps reached its
 * floor at RL step 125) and its second moments from gradients at a 10× larger learning rate.
 * Both engines start a fresh optimizer when a checkpoint has no optimizer files.
 */
async function freshOptimizer(engine: Engine, team: Team): Promise<void> {
  for (const policyId of teamPolicies(team)) {
    const {
      "optimizer.safetensors": _moments,
      "trainer_state.json": _state,
      ...weights
    } = await engine.save(policyId);
    await engine.load(policyId, weights);
  }
}
