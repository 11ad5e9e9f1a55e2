/**
 * Named crash points for fault tests. When TROUPE_KILL_AT names a point ("<phase>@<n>"), the
 * process sends itself SIGKILL there: a real kill -9, no cleanup, no flush, at a known place.
 * `n` is the step for the training loop's and the warm start's points, and the lease's 0-based
 * count for a rollout worker's "rollout-leased" (right after it took its n-th lease, before it
 * sampled). Unset (always, outside tests) it costs one string comparison.
 */
export type FaultPhase =
  | "after-rollout"
  | "after-learner"
  | "mid-checkpoints"
  | "after-checkpoints"
  | "after-commit"
  | "sft-after-step"
  | "rollout-leased";

export function faultPoint(phase: FaultPhase, n: number): void {
  const target = process.env.TROUPE_KILL_AT;
  if (target !== undefined && target === `${phase}@${n}`) process.kill(process.pid, "SIGKILL");
}
