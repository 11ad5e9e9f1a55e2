/**
 * Where everything of a run lives, relative to the store's root (see README "Layout").
 * Steps and policy versions are zero-padded to 8 digits so that keys sort in numeric order.
 */
import { checkKey } from "./object-store.ts";

export const STEP_DIGITS = 8;

export function pad(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0)
    throw new Error(`step/version must be a non-negative integer, got ${n}`);
  return String(n).padStart(STEP_DIGITS, "0");
}

/** Ids used as key segments: letters, digits, "_", "-", "." (not leading), at most 128 chars. */
const ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
export function checkId(what: string, id: string): string {
  if (!ID.test(id)) throw new Error(`${what} "${id}" must match ${ID} (it becomes part of object keys)`);
  return id;
}

export const runRoot = (runId: string) => `runs/${checkId("runId", runId)}`;
export const configKey = (runId: string) => `${runRoot(runId)}/config.json`;
export const stepsPrefix = (runId: string) => `${runRoot(runId)}/steps/`;
export const stepFolder = (runId: string, step: number) => `${runRoot(runId)}/steps/${pad(step)}`;
export const checkpointsPrefix = (runId: string, policyId: string) =>
  `${runRoot(runId)}/checkpoints/${checkId("policyId", policyId)}/`;
export const checkpointFolder = (runId: string, policyId: string, step: number) =>
  `${checkpointsPrefix(runId, policyId)}${pad(step)}`;
export const metricsPrefix = (runId: string) => `${runRoot(runId)}/metrics/`;
export const metricsKey = (runId: string, step: number, source: string) =>
  `${metricsPrefix(runId)}${pad(step)}.${checkId("metrics source", source)}.json`;
export const metricsJsonlKey = (runId: string) => `${runRoot(runId)}/metrics.jsonl`;
export const rolloutsPrefix = (runId: string) => `${runRoot(runId)}/rollouts/`;
export const rolloutFolder = (runId: string, policyVersion: number, workerId: string, seq: number) =>
  `${rolloutsPrefix(runId)}${pad(policyVersion)}/${checkId("workerId", workerId)}-${pad(seq)}`;
export const workFolder = (runId: string) => `${runRoot(runId)}/work/`;
export const MANIFEST = "manifest.json";

/** A checkpoint file name as a relative key (may contain "/" for sub-folders). */
export function checkFileName(name: string): string {
  checkKey(name);
  if (name === MANIFEST) throw new Error(`checkpoint file name "${name}" is reserved`);
  return name;
}
