/**
 * `train --mode rollout --worker <id>`: a rollout worker process (run/async-rl.ts), started as
 * every run is (launch.ts), until the learner has committed the run's last step.
 */
import type { RunStore } from "@troupe/storage";
import type { Recipe } from "../recipe.ts";
import { consoleReporter } from "../reports/reporter.ts";
import { DEFAULT_IDLE_MS, DEFAULT_POLL_MS, loadInitialWeights, rolloutWorker } from "../run/async-rl.ts";
import { launchRun } from "../run/launch.ts";

export interface RolloutWorkerCommand {
  readonly recipe: Recipe;
  readonly runStore: RunStore;
  /** Unique per worker process. */
  readonly workerId: string;
  readonly leaseMs: number;
  readonly idleMs?: number;
}

export async function commandRolloutWorker(options: RolloutWorkerCommand): Promise<number> {
  const { recipe, runStore, workerId, leaseMs } = options;
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  const reporter = consoleReporter();
  const worker = await launchRun({ recipe, runStore, reporter }, async (run) => {
    await loadInitialWeights({ ...run, store: runStore.store }, DEFAULT_POLL_MS, idleMs);
    return rolloutWorker({ ...run, workerId, leaseMs, idleMs });
  });
  reporter.finish();
  process.stdout.write(`worker ${workerId}: committed ${worker.committed.length} rollout shards\n`);
  return 0;
}
