/** Statistics over seeds, shared by trainer:compare and trainer:sweep. */

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
  const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, n);
  if (n < 2) return { mean };
  const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1);
  const half = (T975[n - 2] ?? 1.96) * Math.sqrt(variance / n);
  return { mean, ci95: [Math.max(bounds[0], mean - half), Math.min(bounds[1], mean + half)] };
}
