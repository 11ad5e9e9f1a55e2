/**
 * Named crash points for fault tests. When TROUPE_KILL_AT names a point ("<phase>@<step>"), the
 * process sends itself SIGKILL there: a real kill -9, no cleanup, no flush, at a known place in
 * the step. Unset (always, outside tests) it costs one string comparison.
 */
export type FaultPhase =
  | "after-rollout"
  | "after-learner"
  | "mid-checkpoints"
  | "after-checkpoints"
  | "after-commit"
  | "sft-after-step";

export function faultPoint(phase: FaultPhase, step: number): void {
  const target = process.env.TROUPE_KILL_AT;
  if (target !== undefined && target === `${phase}@${step}`) process.kill(process.pid, "SIGKILL");
}
