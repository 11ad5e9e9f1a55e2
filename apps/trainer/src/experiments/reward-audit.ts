/**
 * Rewards under pressure: what a run's training samples were paid, against whether their episode
 * passed every hidden test. For each step (and the first and last `window` steps together):
 *
 *   success          share of samples whose episode succeeded
 *   reward           mean of the reward the estimator used (team · w + local · w)
 *   paid w/o success share of samples paid anything (reward > 0) in an episode that did not succeed
 *   team w/o success share of samples whose *team* reward is above `--team-bar` in an episode that
 *                    did not succeed (helper + main: 2.5 is the most tiers 1–3 pay, so anything above
 *                    it is a collaboration tier; coder + tester: 0, the team reward is success's)
 *
 * and the last step's completions, a few per agent, with their rewards: what the policies wrote
 * at the end. A reward that rises while success does not is the finding to look for.
 *
 * A sample whose strategy did not record its episode's success (MAGRPO's) counts as a success
 * when its team reward is at least `--success-at` (helper + main under `strict`: 2.5, the tiers
 * of a solution whose every test passes — with 4 asserts a failing one earns at most 2.25;
 * coder + tester: 1); without `--success-at` such a sample counts as not solved. `--agent <id>`
 * audits that agent's samples only (coder + tester: the coder's, without the tester's).
 *
 *   npx tsx --conditions=@troupe/source apps/trainer/src/experiments/reward-audit.ts \
 *     --store /work/stores/coding-x --run <runId> [--team-bar 2.5] [--success-at 2.5] [--window 5] [--show 4] [--agent coder]
 */
import { parseArgs } from "node:util";
import type { Sample } from "@troupe/core";
import { FileStore, RunStore } from "@troupe/storage/node";

export interface StepAudit {
  readonly step: number;
  readonly samples: number;
  readonly success: number;
  readonly reward: number;
  readonly paidWithoutSuccess: number;
  readonly teamWithoutSuccess: number;
}

const mean = (xs: readonly number[]) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

/** One step's shares (`teamBar`: the team reward above which a failed episode was paid a collaboration tier). */
export function auditSamples(
  step: number,
  samples: readonly Sample[],
  teamBar: number,
  successAt = Number.POSITIVE_INFINITY,
): StepAudit {
  const solved = (s: Sample) => s.success ?? s.reward.team >= successAt;
  const failed = samples.filter((s) => !solved(s));
  const n = Math.max(1, samples.length);
  return {
    step,
    samples: samples.length,
    success: samples.filter(solved).length / n,
    reward: mean(samples.map((s) => s.reward.total)),
    paidWithoutSuccess: failed.filter((s) => s.reward.total > 0).length / n,
    teamWithoutSuccess: failed.filter((s) => s.reward.team > teamBar).length / n,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      store: { type: "string" },
      run: { type: "string" },
      "team-bar": { type: "string", default: "2.5" },
      "success-at": { type: "string" },
      window: { type: "string", default: "5" },
      show: { type: "string", default: "4" },
      agent: { type: "string" },
    },
  });
  if (!values.store || !values.run) {
    console.error("reward-audit: --store <folder> and --run <runId> are required");
    process.exit(2);
  }
  const run = new RunStore(new FileStore(values.store), values.run);
  const latest = await run.latestCommittedStep();
  if (latest === undefined) {
    console.error(`reward-audit: run ${values.run} has no committed step in ${values.store}`);
    process.exit(1);
  }
  const teamBar = Number(values["team-bar"]);
  const successAt =
    values["success-at"] === undefined ? Number.POSITIVE_INFINITY : Number(values["success-at"]);
  const window = Number(values.window);
  const rows: StepAudit[] = [];
  const all: Sample[][] = [];
  for (let step = 0; step <= latest; step++) {
    const samples = [...(await run.readStep(step)).shards.values()]
      .flat()
      .filter((s) => values.agent === undefined || s.provenance.agent === values.agent);
    all.push(samples);
    rows.push(auditSamples(step, samples, teamBar, successAt));
  }
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  console.log("step  samples  success  reward  paid-w/o-success  team>bar-w/o-success");
  for (const r of rows)
    console.log(
      `${String(r.step).padStart(4)}  ${String(r.samples).padStart(7)}  ${pct(r.success).padStart(7)}  ${r.reward.toFixed(3).padStart(6)}  ${pct(r.paidWithoutSuccess).padStart(16)}  ${pct(r.teamWithoutSuccess).padStart(20)}`,
    );
  const pooled = (from: number, to: number) =>
    auditSamples(from, all.slice(from, to).flat(), teamBar, successAt);
  const unrecorded = all.flat().filter((s) => s.success === undefined).length;
  if (unrecorded > 0)
    console.log(
      `${unrecorded} samples without their episode's success: ${Number.isFinite(successAt) ? `solved when the team reward is at least ${successAt}` : "counted as not solved (give --success-at)"}`,
    );
  const first = pooled(0, Math.min(window, all.length));
  const last = pooled(Math.max(0, all.length - window), all.length);
  const whole = pooled(0, all.length);
  for (const [name, r] of [
    [`first ${window} steps`, first],
    [`last ${window} steps`, last],
    ["all steps", whole],
  ] as const)
    console.log(
      `${name}: success ${pct(r.success)}, reward ${r.reward.toFixed(3)}, paid without success ${pct(r.paidWithoutSuccess)}, team reward above ${teamBar} without success ${pct(r.teamWithoutSuccess)}`,
    );
  const show = Number(values.show);
  console.log(`\nwhat the policies wrote at step ${latest} (${show} per agent):`);
  const lastSamples = all.at(-1) ?? [];
  for (const agent of [...new Set(lastSamples.map((s) => s.provenance.agent))].sort()) {
    for (const s of lastSamples.filter((x) => x.provenance.agent === agent).slice(0, show)) {
      console.log(
        `--- ${agent} · ${s.provenance.taskId} · reward ${s.reward.total.toFixed(2)} (team ${s.reward.team.toFixed(2)}) · ${(s.success ?? s.reward.team >= successAt) ? "solved" : "not solved"}\n${s.completionText}`,
      );
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((error: unknown) => {
    console.error(`reward-audit: ${(error as Error).message}`);
    process.exit(1);
  });
}
