/**
 * The training loop (mode "all": rollouts and learner in one process).
 *
 * Step s:  tasks(s) → rollouts with policy version s → samples (advantages inside their groups)
 *          → one learner update per policy → checkpoint of every policy (version s+1)
 *          → metrics → the step's manifest, committed last with a conditional put.
 * A step is visible only once its manifest exists. Everything before it can be lost to a crash
 * or kill at any point; `resume` then redoes that step from the checkpoints of step s−1, and
 * because every seed derives from (run seed, step, task, branch), the redone step produces the
 * same samples: nothing lost, nothing duplicated.
 */
import {
  deriveSeed,
  type PolicySet,
  type Sample,
  samplingParams,
  type Team,
  teamPolicies,
} from "@troupe/core";
import { type Engine, enginePolicy, type OptimizerConfig } from "@troupe/engine";
import type { MetricValue, RunStore } from "@troupe/storage";
import type { TrainerEnvironment } from "./envs.ts";
import { type EvalResult, evaluate } from "./evaluate.ts";
import { faultPoint } from "./faults.ts";
import { learnerStep } from "./learner.ts";
import type { Recipe } from "./recipe.ts";
import { runStrategy } from "./strategies.ts";

export interface TrainReporter {
  step(info: StepReport): void;
  eval(step: number, result: EvalResult): void;
  note(message: string): void;
}

export interface StepReport {
  readonly step: number;
  readonly totalSteps: number;
  readonly meanReward: number;
  readonly successRate: number;
  readonly tokensPerSecond: number;
  readonly seconds: number;
  readonly samples: number;
  readonly loss: number;
}

export interface TrainOptions {
  readonly recipe: Recipe;
  readonly trainerEnv: TrainerEnvironment;
  readonly team: Team;
  readonly engine: Engine;
  readonly runStore: RunStore;
  readonly reporter: TrainReporter;
  /** Set when SIGINT/SIGTERM arrives: the loop commits the current step and returns. */
  readonly stopRequested?: () => boolean;
}

export interface TrainSummary {
  readonly runId: string;
  readonly firstStep: number;
  readonly lastCommittedStep: number | undefined;
  readonly stoppedEarly: boolean;
  readonly evals: { step: number; result: EvalResult }[];
}

export function optimizerConfig(recipe: Recipe): OptimizerConfig {
  return { ...recipe.optimizer, totalSteps: Math.max(1, recipe.train.steps) };
}

/** Test tasks depend on the environment alone (seed 0 of the test stream), never on the run. */
export function evalTasks(trainerEnv: TrainerEnvironment, recipe: Recipe, count = recipe.train.evalTasks) {
  return trainerEnv.generateTasks("test", count, 0);
}

export function trainTasks(trainerEnv: TrainerEnvironment, recipe: Recipe, step: number) {
  return trainerEnv.generateTasks(
    "train",
    recipe.train.tasksPerStep,
    deriveSeed(recipe.seed, "train-tasks", step),
  );
}

/** The team's policies as the engine serves them, tagged with the weights' version. */
export function policySet(engine: Engine, team: Team, version: number): PolicySet {
  return Object.fromEntries(teamPolicies(team).map((id) => [id, enginePolicy(engine, id, version)]));
}

/** Loads the checkpoints of a committed step into the engine. */
export async function restoreStep(
  engine: Engine,
  runStore: RunStore,
  team: Team,
  step: number,
): Promise<void> {
  for (const policyId of teamPolicies(team)) {
    await engine.load(policyId, await runStore.readCheckpoint(policyId, step));
  }
}

export async function train(options: TrainOptions): Promise<TrainSummary> {
  const { recipe, trainerEnv, team, engine, runStore, reporter } = options;
  const sampling = samplingParams(recipe.sampling);
  const evalSampling = samplingParams({ ...recipe.sampling, temperature: recipe.train.evalTemperature });
  const testTasks = evalTasks(trainerEnv, recipe);
  const latest = await runStore.latestCommittedStep();
  const firstStep = latest === undefined ? 0 : latest + 1;
  if (latest !== undefined) {
    await restoreStep(engine, runStore, team, latest);
    reporter.note(`resuming run ${runStore.runId} after committed step ${latest}`);
  }
  const evals: { step: number; result: EvalResult }[] = [];
  const runEval = async (step: number): Promise<EvalResult> => {
    const result = await evaluate(
      trainerEnv,
      team,
      policySet(engine, team, step),
      testTasks,
      evalSampling,
      recipe.seed,
    );
    evals.push({ step, result });
    reporter.eval(step, result);
    return result;
  };
  if (firstStep === 0) {
    const result = await runEval(0);
    await runStore.writeMetrics(0, evalMetrics(result), "eval-start");
  }
  let lastCommitted = latest;
  for (let step = firstStep; step < recipe.train.steps; step++) {
    const started = performance.now();
    const tasks = trainTasks(trainerEnv, recipe, step);
    const rollout = await runStrategy(
      {
        runId: runStore.runId,
        step,
        seed: recipe.seed,
        env: trainerEnv.env,
        team,
        policies: policySet(engine, team, step),
        sampling,
      },
      tasks,
      recipe.strategy,
    );
    faultPoint("after-rollout", step);
    const learner = await learnerStep(engine, rollout.samples, {
      loss: recipe.loss,
      optimizer: optimizerConfig(recipe),
      microBatchSize: recipe.train.microBatchSize,
    });
    faultPoint("after-learner", step);
    for (const [i, policyId] of teamPolicies(team).entries()) {
      await runStore.writeCheckpoint(policyId, step, await engine.save(policyId));
      if (i === 0) faultPoint("mid-checkpoints", step);
    }
    faultPoint("after-checkpoints", step);
    const seconds = (performance.now() - started) / 1000;
    const tokens = rollout.samples.reduce((n, s) => n + s.completionTokenIds.length, 0);
    const metrics: Record<string, MetricValue> = {
      samples: rollout.samples.length,
      completions: rollout.stats.completions,
      meanReward: mean(rollout.samples.map((s) => s.reward.total)),
      episodeSuccess: mean(rollout.episodes.map((e) => (e.success ? 1 : 0))),
      tokens,
      seconds,
    };
    for (const [policyId, m] of learner) {
      for (const [k, v] of Object.entries(m)) metrics[`${policyId}/${k}`] = v;
    }
    const isLast = step === recipe.train.steps - 1;
    const evalDue = isLast || (recipe.train.evalEvery > 0 && (step + 1) % recipe.train.evalEvery === 0);
    if (evalDue) Object.assign(metrics, prefixed("eval/", evalMetrics(await runEval(step + 1))));
    await runStore.writeMetrics(step, metrics);
    faultPoint("after-metrics", step);
    await runStore.commitStep(step, new Map<string, readonly Sample[]>([["rollouts", rollout.samples]]), {
      policies: teamPolicies(team),
      tasks: tasks.map((t) => t.id),
    });
    lastCommitted = step;
    faultPoint("after-commit", step);
    const losses = [...learner.values()].map((m) => m.loss);
    reporter.step({
      step,
      totalSteps: recipe.train.steps,
      meanReward: metrics.meanReward as number,
      successRate: metrics.episodeSuccess as number,
      tokensPerSecond: tokens / seconds,
      seconds,
      samples: rollout.samples.length,
      loss: losses.length ? mean(losses) : 0,
    });
    if (options.stopRequested?.()) {
      reporter.note(`stopped after committing step ${step}; continue with --resume`);
      return {
        runId: runStore.runId,
        firstStep,
        lastCommittedStep: lastCommitted,
        stoppedEarly: true,
        evals,
      };
    }
  }
  await runStore.writeMetricsJsonl({ committedOnly: true });
  return { runId: runStore.runId, firstStep, lastCommittedStep: lastCommitted, stoppedEarly: false, evals };
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

function prefixed(prefix: string, metrics: Record<string, MetricValue>): Record<string, MetricValue> {
  return Object.fromEntries(Object.entries(metrics).map(([k, v]) => [`${prefix}${k}`, v]));
}

function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}
