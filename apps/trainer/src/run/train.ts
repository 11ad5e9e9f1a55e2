/**
 * The training loop (mode "all": rollouts and learner in one process; mode "learner" plugs in
 * rollouts from the store's queue instead, see async-rl.ts).
 *
 * Step s:  tasks(s) → rollouts with policy version s → samples (rewards, returns, group keys)
 *          → the advantage stage: group filters, then the strategy's estimator per group
 *          → one learner update per policy → checkpoint of every policy (version s+1)
 *          → metrics → the step's manifest, committed last with a conditional put
 *          → checkpoints older than s deleted unless (step + 1) % train.checkpointEvery === 0.
 * A step is visible only once its manifest exists. Everything before it can be lost to a crash
 * or kill at any point; `resume` then redoes that step from the checkpoints of step s−1, and
 * because every seed derives from (run seed, step, task, branch), the redone step produces the
 * same samples: nothing lost, nothing duplicated.
 */
import { mean, type RolloutSample, type Sample, teamPolicies } from "@troupe/core";
import type { OptimizerConfig, TrainStepConfig } from "@troupe/engine";
import { estimateAdvantages, type FilterReport, runStrategy } from "@troupe/rl";
import { type MetricValue, mustCommit, type RunStore } from "@troupe/storage";
import { policySet } from "../engines.ts";
import { type EvalResult, evaluate } from "../evaluate.ts";
import type { Recipe } from "../recipe.ts";
import { EventFileWriter } from "../reports/tensorboard.ts";
import { evalSampling, rolloutSampling } from "../sampling.ts";
import { restoreStep } from "./checkpoints.ts";
import type { RunContext, StepReport } from "./context.ts";
import { faultPoint } from "./faults.ts";
import { learnerStep, type ReferenceScorer } from "./learner.ts";
import { createReferenceEngine } from "./reference.ts";
import { evalTasks, trainTasks } from "./tasks.ts";

/** A run's context, with the run itself in place of the store it is in (`runStore.store`). */
export interface TrainOptions extends Omit<RunContext, "store" | "stopRequested"> {
  readonly runStore: RunStore;
  /**
   * Asked after each step's learner update (with that step): true — e.g. after SIGINT/SIGTERM —
   * makes the loop commit that step and return. warmStartAndTrain also asks it with −1 after each
   * committed warm-start step, and stops the warm start there.
   */
  readonly stopRequested?: (step: number) => boolean;
  /** Where the samples come from (default: `localRollouts`, mode "all"). */
  readonly rollouts?: RolloutSource;
  /**
   * Scores ℓ_ref for the KL penalty when loss.klCoef > 0. Default: a second engine holding the
   * recipe's warm start from `runStore`'s store (reference.ts), created here and closed at the end.
   */
  readonly reference?: ReferenceScorer;
}

export interface TrainSummary {
  readonly runId: string;
  readonly firstStep: number;
  readonly lastCommittedStep: number | undefined;
  readonly stoppedEarly: boolean;
  readonly evals: { step: number; result: EvalResult }[];
  /** Time the loop spent waiting for storage writes (the part the next step's work did not hide). */
  readonly storageWaitMs: number;
}

/** The recipe's micro-batch bounds, as the engines take them. */
export function microBatching(
  recipe: Recipe,
): Pick<TrainStepConfig, "microBatchSize" | "maxTokensPerMicroBatch"> {
  return {
    microBatchSize: recipe.train.microBatchSize,
    ...(recipe.train.maxTokensPerMicroBatch === undefined
      ? {}
      : { maxTokensPerMicroBatch: recipe.train.maxTokensPerMicroBatch }),
  };
}

export function optimizerConfig(recipe: Recipe): OptimizerConfig {
  // The LR schedule runs over optimizer updates: epochs of them per training step.
  return { ...recipe.optimizer, totalSteps: Math.max(1, recipe.train.steps * recipe.train.epochs) };
}

/**
 * What one training step learns from: the samples, and a few numbers about where they came from.
 * The samples carry rewards, returns and group keys; their advantages are estimated by train().
 */
export interface RolloutBatch {
  /** Without advantages: the advantage stage runs on the whole step (train). */
  readonly samples: readonly RolloutSample[];
  /** Ids of the tasks the samples are for (recorded in the step's manifest). */
  readonly tasks: readonly string[];
  /** Fraction of episodes that succeeded (of samples' episodes, when only samples are at hand). */
  readonly successRate: number;
  /** Extra per-step metrics (e.g. completions, policy versions of the samples). */
  readonly metrics: Readonly<Record<string, MetricValue>>;
  /** Extra manifest meta (e.g. the rollout shards a learner step consumed). */
  readonly meta: Readonly<Record<string, unknown>>;
}

/** Produces the samples of training step `step`; the engine holds weights version `step`. */
export type RolloutSource = (step: number) => Promise<RolloutBatch>;

/** Mode "all": the step's tasks rolled out here, with the weights the engine holds right now. */
export function localRollouts(options: TrainOptions): RolloutSource {
  const { recipe, trainerEnv, team, engine, runStore } = options;
  const sampling = rolloutSampling(recipe);
  return async (step) => {
    const tasks = trainTasks(trainerEnv, recipe, step);
    const rollout = await runStrategy(
      {
        runId: runStore.runId,
        step,
        seed: recipe.seed,
        env: trainerEnv.env,
        team,
        policies: policySet(engine, team, step),
        ...sampling,
      },
      tasks,
      recipe.strategy,
    );
    const successRate = mean(rollout.episodes.map((e) => (e.success ? 1 : 0)));
    return {
      samples: rollout.samples,
      tasks: tasks.map((t) => t.id),
      successRate,
      metrics: { completions: rollout.stats.completions, episodeSuccess: successRate },
      meta: {},
    };
  };
}

/**
 * The learner loop. The storage writes of step s — checkpoints, metrics, the manifest last, then
 * checkpoint retention — run in the background while step s+1 samples with the weights already in
 * memory; step s+1 commits only after step s has, and train() never returns with a write in
 * flight. A kill therefore loses at most the uncommitted steps (up to two: s being written and s+1
 * being computed), which resume redoes identically. The engine's `save` is awaited in the
 * foreground and returns fresh bytes (a serialised copy), so the checkpoint is the weights after
 * step s, whatever step s+1 does next.
 */
export async function train(options: TrainOptions): Promise<TrainSummary> {
  const { recipe, team, runStore, reporter } = options;
  const rollouts = options.rollouts ?? localRollouts(options);
  const latest = await resumeRun(options);
  const firstStep = latest === undefined ? 0 : latest + 1;
  const scalars = tensorboardScalars(recipe, runStore);
  const heldOut = heldOutEvaluation(options);
  if (firstStep === 0) {
    const result = await heldOut.run(0);
    await runStore.writeMetrics(0, evalMetrics(result), "eval-start");
    await scalars(0, prefixed("eval/", evalMetrics(result)));
  }
  // The KL penalty's reference: the warm start (also on resume, whatever the engine holds now).
  const ownReference =
    recipe.loss.klCoef > 0 && options.reference === undefined
      ? await createReferenceEngine(recipe, team, runStore.store)
      : undefined;
  const reference = options.reference ?? ownReference;
  const commits = backgroundCommits(options, latest, scalars);
  const summary = (stoppedEarly: boolean): TrainSummary => ({
    runId: runStore.runId,
    firstStep,
    lastCommittedStep: commits.lastCommitted(),
    stoppedEarly,
    evals: heldOut.evals,
    storageWaitMs: commits.waitedMs(),
  });
  try {
    for (let step = firstStep; step < recipe.train.steps; step++) {
      const work = await trainStep(options, step, rollouts, reference, heldOut);
      await commits.awaitCommitted(); // step s−1 is committed before step s writes anything
      commits.start(step, work);
      if (options.stopRequested?.(step)) {
        await commits.awaitCommitted();
        reporter.note(`stopped after committing step ${step}; continue with --resume`);
        return summary(true);
      }
    }
    await commits.awaitCommitted();
  } finally {
    // An error in the foreground still waits for the write in flight (its own error, if any, loses).
    await commits.drain();
    await ownReference?.close();
  }
  await runStore.writeMetricsJsonl({ committedOnly: true });
  return summary(false);
}

/**
 * Before trusting a run that has committed steps: every committed object (shards included)
 * against its manifest — an IntegrityError names a damaged one — then away with what uncommitted
 * attempts left behind, and the engine restored to the newest committed step. Its number, or
 * undefined for a new run.
 */
async function resumeRun(options: TrainOptions): Promise<number | undefined> {
  const { team, engine, runStore, reporter } = options;
  const latest = await runStore.latestCommittedStep();
  const verified = latest === undefined ? undefined : await runStore.verify();
  const swept = await runStore.sweepUncommitted();
  if (latest !== undefined) {
    await restoreStep(engine, runStore, team, latest);
    reporter.note(
      `resuming run ${runStore.runId} after committed step ${latest} (verified ${verified!.objects} objects ` +
        `against their manifests; removed ${swept.length} left by uncommitted attempts)`,
    );
  }
  return latest;
}

/** Logs scalars at x (RL steps done) to the run's TensorBoard events, when the recipe keeps them. */
type ScalarLog = (x: number, metrics: Record<string, MetricValue>) => Promise<void>;

/**
 * logging.tensorboard: an events file of this call's steps (x = RL steps done, as the held-out
 * curve), rewritten in the store after every commit; without it, nothing.
 */
function tensorboardScalars(recipe: Recipe, runStore: RunStore): ScalarLog {
  const events = recipe.logging?.tensorboard ? new EventFileWriter() : undefined;
  return async (x, metrics) => {
    if (!events) return;
    events.add(x, metrics);
    await runStore.store.put(`runs/${runStore.runId}/tensorboard/${events.name}`, events.bytes());
  };
}

/** The held-out evaluation of a run: `run(step)` evaluates the weights of version `step`. */
interface HeldOutEvaluation {
  run(step: number): Promise<EvalResult>;
  /** Every evaluation of this call, in order. */
  readonly evals: { step: number; result: EvalResult }[];
}

function heldOutEvaluation(options: TrainOptions): HeldOutEvaluation {
  const { recipe, trainerEnv, team, engine, reporter } = options;
  const sampling = evalSampling(recipe);
  const tasks = evalTasks(trainerEnv, recipe);
  const evals: { step: number; result: EvalResult }[] = [];
  return {
    evals,
    async run(step) {
      const policies = policySet(engine, team, step);
      const result = await evaluate({ trainerEnv, team, policies, tasks, sampling, seed: recipe.seed });
      evals.push({ step, result });
      reporter.eval(step, result);
      return result;
    },
  };
}

/**
 * One training step's computation, nothing written: the step's rollouts, the advantage stage on
 * the whole step (mode learner: on shards that passed the staleness check), the learner update,
 * the policies' checkpoints, the metrics, and the held-out evaluation when one is due.
 */
async function trainStep(
  options: TrainOptions,
  step: number,
  rollouts: RolloutSource,
  reference: ReferenceScorer | undefined,
  heldOut: HeldOutEvaluation,
): Promise<StepWork> {
  const { recipe, team, engine } = options;
  const started = performance.now();
  const batch = await rollouts(step);
  faultPoint("after-rollout", step);
  const estimated = estimateAdvantages(batch.samples, recipe.advantage);
  const samples = estimated.samples;
  const learner = await learnerStep(engine, samples, {
    loss: recipe.loss,
    optimizer: optimizerConfig(recipe),
    ...microBatching(recipe),
    epochs: recipe.train.epochs,
    ...(reference ? { reference } : {}),
  });
  faultPoint("after-learner", step);
  const checkpoints: [string, Record<string, Uint8Array>][] = [];
  for (const policyId of teamPolicies(team)) checkpoints.push([policyId, await engine.save(policyId)]);
  const tokens = samples.reduce((n, s) => n + s.completionTokenIds.length, 0);
  const metrics: Record<string, MetricValue> = {
    samples: samples.length,
    ...batch.metrics,
    ...(recipe.advantage.filters ? filterMetrics(estimated.filters) : {}),
    // Group filters may drop every sample of a step: its mean reward is then reported as 0.
    meanReward: samples.length ? mean(samples.map((s) => s.reward.total)) : 0,
    tokens,
  };
  for (const [policyId, m] of learner) {
    for (const [k, v] of Object.entries(m)) metrics[`${policyId}/${k}`] = v;
  }
  const isLast = step === recipe.train.steps - 1;
  const evalDue = isLast || (recipe.train.evalEvery > 0 && (step + 1) % recipe.train.evalEvery === 0);
  if (evalDue) Object.assign(metrics, prefixed("eval/", evalMetrics(await heldOut.run(step + 1))));
  // Time of the step's own work (rollouts, learner, eval); its storage writes may overlap the next step.
  const seconds = (performance.now() - started) / 1000;
  metrics.seconds = seconds;
  const losses = [...learner.values()].map((m) => m.loss);
  return {
    checkpoints,
    metrics,
    samples,
    meta: { tasks: batch.tasks, ...batch.meta },
    report: {
      step,
      totalSteps: recipe.train.steps,
      meanReward: metrics.meanReward as number,
      successRate: batch.successRate,
      tokensPerSecond: tokens / seconds,
      seconds,
      samples: samples.length,
      loss: losses.length ? mean(losses) : 0,
    },
  };
}

/**
 * The commits of a run's steps, one in flight at a time, in the background of the next step's work.
 * `start(step, work)` begins step s's commit; `awaitCommitted()` waits for the commit in flight
 * (and rethrows its error), timing the wait; `drain()` waits for it, ignoring its error.
 */
function backgroundCommits(options: TrainOptions, latest: number | undefined, scalars: ScalarLog) {
  let pending: Promise<void> | undefined;
  let lastCommitted = latest;
  let waitedMs = 0;
  return {
    start(step: number, work: StepWork): void {
      pending = commitStep(options, step, work, scalars, () => {
        lastCommitted = step;
      });
      pending.catch(() => {}); // handled by awaitCommitted(); keeps a failed write from being "unhandled" meanwhile
    },
    async awaitCommitted(): Promise<void> {
      const p = pending;
      pending = undefined;
      const started = performance.now();
      await p;
      waitedMs += performance.now() - started;
    },
    drain: async (): Promise<void> => {
      await pending?.catch(() => {});
    },
    lastCommitted: () => lastCommitted,
    waitedMs: () => waitedMs,
  };
}

/**
 * Step s's writes. All data objects first, concurrently (invisible until their manifests; each
 * await is a turn of the event loop, which a synchronous engine run can hold for a while, so
 * fewer sequential awaits finish sooner behind the next step); then the manifests in commit
 * order: each policy's checkpoint, the metrics row, the step (the commit), then retention. The
 * metrics row is a plain put, so it waits for the checkpoints: a second process writing this run
 * stops at the first checkpoint it lost (mustCommit) without replacing the winner's row.
 */
async function commitStep(
  options: TrainOptions,
  step: number,
  work: StepWork,
  scalars: ScalarLog,
  committed: () => void,
): Promise<void> {
  const { recipe, team, runStore, reporter } = options;
  const [stepStage, checkpointStages] = await Promise.all([
    runStore.stageStep(step, new Map<string, readonly Sample[]>([["rollouts", work.samples]]), {
      policies: teamPolicies(team),
      ...work.meta,
    }),
    Promise.all(work.checkpoints.map(([policyId, files]) => runStore.stageCheckpoint(policyId, step, files))),
  ]);
  // Each commit is this process's or the run has a second writer: it stops at the first it lost.
  const { runId } = runStore;
  for (const [i, stage] of checkpointStages.entries()) {
    mustCommit(await stage.commit(), runId, `the checkpoint of ${work.checkpoints[i]![0]} at step ${step}`);
    if (i === 0) faultPoint("mid-checkpoints", step);
  }
  await runStore.writeMetrics(step, work.metrics);
  faultPoint("after-checkpoints", step);
  mustCommit(await stepStage.commit(), runId, `step ${step}`);
  committed();
  await scalars(step + 1, work.metrics);
  faultPoint("after-commit", step);
  await runStore.pruneCheckpoints(step, { keepEvery: recipe.train.checkpointEvery });
  reporter.step(work.report);
}

interface StepWork {
  readonly checkpoints: readonly (readonly [string, Record<string, Uint8Array>])[];
  readonly metrics: Record<string, MetricValue>;
  readonly samples: readonly Sample[];
  readonly meta: Record<string, unknown>;
  readonly report: StepReport;
}

export function evalMetrics(result: EvalResult): Record<string, MetricValue> {
  return {
    successRate: result.successRate,
    ci95Low: result.ci95[0],
    ci95High: result.ci95[1],
    meanTeamReturn: result.meanTeamReturn,
    tasks: result.tasks,
  };
}

/** What the group filters kept and dropped (only with a `filters` section). */
function filterMetrics(report: FilterReport): Record<string, MetricValue> {
  return {
    groupsKept: report.kept,
    groupsDroppedZeroVariance: report.droppedZeroVariance,
    groupsDroppedLowMean: report.droppedLowMean,
  };
}

function prefixed(prefix: string, metrics: Record<string, MetricValue>): Record<string, MetricValue> {
  return Object.fromEntries(Object.entries(metrics).map(([k, v]) => [`${prefix}${k}`, v]));
}
