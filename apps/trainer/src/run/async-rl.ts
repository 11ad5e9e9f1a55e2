/**
 * Modes "rollout" and "learner": asynchronous RL with rollout workers and one learner that talk
 * only through the store (no sockets, no shared memory), so workers can run anywhere the store is.
 *
 *   learner  trains step s with weights version s and commits it (checkpoints, then the step's
 *            manifest): that publishes version s+1. Its samples are the rollout shards of step s's
 *            tasks, each sampled with a version v ≥ s − maxStaleness (0: strictly on-policy).
 *   worker   loads the newest published version V, and for each step s it may sample for
 *            (V ≥ s − maxStaleness, s not yet committed) takes a lease on one task of s, rolls it out
 *            with version V and commits the samples as a rollout shard tagged with V. Shards hold
 *            rewards, returns and group keys; the learner estimates advantages (train.ts) once it
 *            holds all of step s's shards, so group filters see the whole step.
 *
 * Units of work and shards. Task i of step s is one unit; its shard lives in the queue at
 *   rollouts/<V>/step-<s>-<i>/        (RolloutQueue's "<workerId>-<seq>" with stream "step-<s>", seq i)
 * so the learner finds step s's shards by name, and two workers that sampled the same unit with the
 * same version race on one manifest (putIfAbsent): one copy counts. Leases (RolloutQueue.leaseWork)
 * keep workers from sampling the same unit at all; a killed worker's lease expires after
 * `leaseMs` and another worker takes the unit over.
 *
 * Nothing lost, nothing duplicated: the learner claims exactly one shard per task of step s
 * (RolloutQueue.claimFreshest, consumer "learner"), trains on the concatenation in task order, and
 * records the claimed shard names in the step's manifest (`meta.consumed`). A shard claimed for step s belongs
 * to no other step; a learner killed mid-step resumes at s, finds its own claims ("mine") and
 * retrains on the same shards. Surplus copies of a unit (a takeover sampled with a newer version)
 * get an `expired` claim, so the drop is recorded.
 */
import type { RolloutSample } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import { runStrategy } from "@troupe/rl";
import { pad, RolloutQueue, type RunStore } from "@troupe/storage";
import { policySet } from "../engines.ts";
import type { TrainerEnvironment } from "../envs.ts";
import type { Recipe } from "../recipe.ts";
import { rolloutSampling } from "../sampling.ts";
import { restoreStep } from "./checkpoints.ts";
import type { RunContext, TrainReporter } from "./context.ts";
import { faultPoint } from "./faults.ts";
import { trainTasks } from "./tasks.ts";
import type { RolloutSource } from "./train.ts";
import { warmStart } from "./warm-start.ts";
import { warmStartProgress, warmStartRun } from "./warm-start-cache.ts";

/** How long a worker's lease on a unit lasts before another worker may take it over. */
export const DEFAULT_LEASE_MS = 60_000;
/** How often workers and the learner look at the store while waiting. */
export const DEFAULT_POLL_MS = 200;
/**
 * A worker with nothing to sample gives up after this long without the learner committing a step
 * (a learner that died or was never started), instead of polling forever.
 */
export const DEFAULT_IDLE_MS = 10 * 60_000;
/** The learner's consumer group in the queue's claim markers. */
export const LEARNER_CONSUMER = "learner";

export const stepStream = (step: number) => `step-${pad(step)}`;
const unitName = (step: number, task: number) => `${stepStream(step)}-${pad(task)}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The clock of a wait that must see progress: it restarts when the observed value (the newest
 * committed step) changes or on `progress()`, and `expired()` once `idleMs` passed without either.
 */
function idleClock(idleMs: number) {
  let seen: number | undefined;
  let since = Date.now();
  return {
    observe(value: number | undefined) {
      if (value !== seen) this.progress();
      seen = value;
    },
    progress() {
      since = Date.now();
    },
    expired: () => Date.now() - since > idleMs,
  };
}

export interface QueueRolloutOptions {
  readonly recipe: Recipe;
  readonly trainerEnv: TrainerEnvironment;
  readonly runStore: RunStore;
  readonly reporter: TrainReporter;
  readonly pollMs?: number;
}

/**
 * Mode "learner": the samples of step s are the queue's shards for step s's tasks. Waits until
 * every task has a shard with version ≥ s − maxStaleness, then claims one per task (the freshest;
 * a shard this learner already claimed for s — before a crash — first).
 */
export function queueRollouts(options: QueueRolloutOptions): RolloutSource {
  const { recipe, trainerEnv, runStore, reporter } = options;
  const queue = new RolloutQueue(runStore.store, runStore.runId, { shardFormat: runStore.shardFormat });
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const tasksPerStep = recipe.train.tasksPerStep;
  return async (step) => {
    const shardsOfStep = () =>
      queue.streamShards(stepStream(step), { minPolicyVersion: Math.max(0, step - recipe.maxStaleness) });
    let byTask = await shardsOfStep();
    let waited = false;
    while (byTask.size < tasksPerStep) {
      if (!waited)
        reporter.note(`learner: waiting for rollout shards of step ${step} (${byTask.size}/${tasksPerStep})`);
      waited = true;
      await sleep(pollMs);
      byTask = await shardsOfStep();
    }
    const chosen = await queue.claimFreshest(byTask, LEARNER_CONSUMER, step);
    const samples: RolloutSample[] = [];
    for (const ref of chosen) {
      const shard = await queue.readShard(ref);
      for (const [row, s] of shard.entries()) {
        if (s.provenance.policyVersion !== ref.policyVersion || s.provenance.step !== step) {
          throw new Error(
            `${ref.folder}: row ${row}: provenance (step ${s.provenance.step}, version ${s.provenance.policyVersion}) does not match the shard (step ${step}, version ${ref.policyVersion})`,
          );
        }
      }
      samples.push(...shard);
    }
    const versions = chosen.map((r) => r.policyVersion);
    return {
      samples,
      tasks: trainTasks(trainerEnv, recipe, step).map((t) => t.id),
      successRate: episodeSuccessRate(samples),
      metrics: {
        shards: chosen.length,
        minPolicyVersion: Math.min(...versions),
        meanPolicyLag: versions.reduce((a, v) => a + (step - v), 0) / versions.length,
      },
      meta: { consumed: chosen.map(RolloutQueue.shardName), policyVersions: versions },
    };
  };
}

/** Fraction of distinct episodes (task, episode) among the samples that succeeded. */
function episodeSuccessRate(samples: readonly RolloutSample[]): number {
  const episodes = new Map<string, boolean>();
  for (const s of samples) episodes.set(`${s.provenance.taskId}/${s.provenance.episode}`, s.success === true);
  return episodes.size ? [...episodes.values()].filter(Boolean).length / episodes.size : 0;
}

/** A run's context (as train()'s, the run in place of its store) and the worker's own settings. */
export interface RolloutWorkerOptions extends Omit<RunContext, "store"> {
  /** Holds weights version 0 (the initial or warm-started weights) when the worker starts. */
  readonly engine: Engine;
  readonly runStore: RunStore;
  readonly workerId: string;
  readonly leaseMs?: number;
  readonly pollMs?: number;
  /** Give up after this long with nothing to sample and no new committed step (DEFAULT_IDLE_MS). */
  readonly idleMs?: number;
}

export interface RolloutWorkerSummary {
  /** Shards this worker committed (the unit's first copy). */
  readonly committed: string[];
}

/** Mode "rollout": samples units until the learner has committed the run's last step. */
export async function rolloutWorker(options: RolloutWorkerOptions): Promise<RolloutWorkerSummary> {
  const { recipe, trainerEnv, team, engine, runStore, workerId, reporter } = options;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  const queue = new RolloutQueue(runStore.store, runStore.runId, { shardFormat: runStore.shardFormat });
  const sampling = rolloutSampling(recipe);
  const lastStep = recipe.train.steps - 1;
  const committed: string[] = [];
  let version = 0;
  let leases = 0;
  const idle = idleClock(idleMs);
  for (;;) {
    const latest = await runStore.latestCommittedStep();
    if (latest !== undefined && latest >= lastStep) return { committed };
    idle.observe(latest);
    const newest = latest === undefined ? 0 : latest + 1;
    if (newest > version) {
      try {
        await restoreStep(engine, runStore, team, newest - 1);
        version = newest;
      } catch (error) {
        // Retention may delete a checkpoint between listing and reading it: look again.
        reporter.note(`worker ${workerId}: version ${newest} not readable yet (${(error as Error).message})`);
        await sleep(pollMs);
        continue;
      }
    }
    let worked = false;
    // Steps this version may sample for: not committed yet, and within the staleness bound.
    for (let step = newest; step <= Math.min(lastStep, version + recipe.maxStaleness) && !worked; step++) {
      const done = await queue.streamShards(stepStream(step));
      for (let task = 0; task < recipe.train.tasksPerStep && !worked; task++) {
        if (done.has(task)) continue;
        if ((await queue.leaseWork(unitName(step, task), workerId, leaseMs)) === "busy") continue;
        faultPoint("rollout-leased", leases++); // the n-th lease taken, before sampling
        const unitTask = trainTasks(trainerEnv, recipe, step)[task]!;
        const rollout = await withLeaseRenewal(queue, unitName(step, task), workerId, leaseMs, reporter, () =>
          runStrategy(
            {
              runId: runStore.runId,
              step,
              seed: recipe.seed,
              env: trainerEnv.env,
              team,
              policies: policySet(engine, team, version),
              ...sampling,
            },
            [unitTask],
            recipe.strategy,
          ),
        );
        const result = await queue.commitShard({
          policyVersion: version,
          workerId: stepStream(step),
          seq: task,
          samples: rollout.samples,
          meta: { producer: workerId, taskId: unitTask.id },
        });
        if (result.committed) committed.push(RolloutQueue.shardName(result.ref));
        worked = true;
        idle.progress();
      }
    }
    if (worked) continue;
    if (idle.expired()) throw idleError(workerId, runStore.runId, latest, idleMs);
    await sleep(pollMs);
  }
}

function idleError(workerId: string, runId: string, latest: number | undefined, idleMs: number): Error {
  return new Error(
    `worker ${workerId}: nothing to sample and no step of run ${runId} committed for ${Math.round(idleMs / 1000)} s ` +
      `(newest committed step: ${latest ?? "none"}). Is the learner running? Start it ` +
      `(train --mode learner --run ${runId}), then restart this worker: it carries on where the run is.`,
  );
}

/**
 * Runs one unit's rollout while re-extending the worker's lease every leaseMs/3, so a rollout
 * longer than one lease (a big model, a slow sandbox) is not taken over by an idle worker.
 * A failed or lost renewal is reported, not fatal: the learner keeps one copy of a unit anyway.
 */
async function withLeaseRenewal<T>(
  queue: RolloutQueue,
  unit: string,
  workerId: string,
  leaseMs: number,
  reporter: TrainReporter,
  work: () => Promise<T>,
): Promise<T> {
  let renewing = Promise.resolve();
  const timer = setInterval(
    () => {
      renewing = renewing.then(async () => {
        try {
          if ((await queue.renewLease(unit, workerId, leaseMs)) === "lost")
            reporter.note(`worker ${workerId}: lease on ${unit} lost to another worker; finishing it anyway`);
        } catch (error) {
          reporter.note(
            `worker ${workerId}: renewing the lease on ${unit} failed (${(error as Error).message})`,
          );
        }
      });
    },
    Math.max(1, Math.floor(leaseMs / 3)),
  );
  try {
    return await work();
  } finally {
    clearInterval(timer);
    await renewing;
  }
}

/**
 * A worker's weights version 0: the recipe's warm start, computed by the learner. The worker waits
 * for the learner's cached warm start to be committed (instead of computing it a second time),
 * then loads it; without a warm start, version 0 is the engine's seeded initialisation.
 */
export async function loadInitialWeights(
  context: RunContext,
  pollMs = DEFAULT_POLL_MS,
  idleMs = DEFAULT_IDLE_MS,
): Promise<void> {
  const { recipe, team, store, reporter } = context;
  const sft = recipe.sft;
  if (!sft || sft.steps === 0) return;
  let noted = false;
  const idle = idleClock(idleMs);
  for (;;) {
    const { runStore: cache } = await warmStartRun(store, recipe, team);
    const { latest, finished } = await warmStartProgress(cache, sft);
    if (finished) break;
    idle.observe(latest);
    if (idle.expired()) {
      throw new Error(
        `worker: the learner's warm start ${cache.runId} made no progress for ${Math.round(idleMs / 1000)} s ` +
          `(newest committed step: ${latest ?? "none"} of ${sft.steps}). Is the learner running?`,
      );
    }
    if (!noted) reporter.note(`worker: waiting for the learner's warm start ${cache.runId}`);
    noted = true;
    await sleep(pollMs);
  }
  await warmStart(context);
}
