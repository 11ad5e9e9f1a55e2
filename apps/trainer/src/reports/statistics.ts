/**
 * The trainer's statistics, in one place: the t-interval over seeds that compare, sweep and their
 * plots report, and the Wilson interval of a held-out evaluation (the mean is @troupe/core's).
 */
import { mean } from "@troupe/core";

/** Wilson score interval for k successes in n trials (z = 1.96: 95%). */
export function wilson(k: number, n: number, z = 1.96): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const denom = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / denom;
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/** Two-sided 97.5% quantiles of Student's t for 1…30 degrees of freedom (then ≈ 1.96). */
const T975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131,
  2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/**
 * Mean and 95% t-interval of per-seed values (a single value: the interval is undefined), clipped
 * to `bounds`: [0, 1] for rates, [−1, 1] for differences of rates.
 */
export function seedInterval(
  values: readonly number[],
  bounds: readonly [number, number] = [0, 1],
): { mean: number; ci95?: [number, number] } {
  const n = values.length;
  if (n === 0) return { mean: 0 };
  const average = mean(values);
  if (n < 2) return { mean: average };
  const variance = values.reduce((s, v) => s + (v - average) ** 2, 0) / (n - 1);
  const half = (T975[n - 2] ?? 1.96) * Math.sqrt(variance / n);
  return {
    mean: average,
    ci95: [Math.max(bounds[0], average - half), Math.min(bounds[1], average + half)],
  };
}

/** Mean over records of each key of the first one (undefined records are skipped; none: undefined). */
export function meanRecord(
  records: readonly (Record<string, number> | undefined)[],
): Record<string, number> | undefined {
  const present = records.filter((r): r is Record<string, number> => r !== undefined);
  if (present.length === 0) return undefined;
  const keys = Object.keys(present[0]!);
  return Object.fromEntries(
    keys.map((k) => [k, present.reduce((s, r) => s + (r[k] ?? 0), 0) / present.length]),
  );
}

/**
 * What compare and sweep report of one arm's or point's runs (one per seed): the final success
 * and the gain over the start, each with its t-interval over seeds, the mean start, and the
 * successes pooled over every run's held-out tasks with their Wilson interval.
 */
export function seedSummary(
  runs: readonly { successRate: number; startSuccessRate: number; successes: number; tasks: number }[],
) {
  const successes = runs.reduce((n, r) => n + r.successes, 0);
  const tasks = runs.reduce((n, r) => n + r.tasks, 0);
  return {
    final: seedInterval(runs.map((r) => r.successRate)),
    gain: seedInterval(
      runs.map((r) => r.successRate - r.startSuccessRate),
      [-1, 1],
    ),
    startMean: runs.length ? mean(runs.map((r) => r.startSuccessRate)) : 0,
    pooled: { successes, tasks, ci95: wilson(successes, tasks) },
  };
}
