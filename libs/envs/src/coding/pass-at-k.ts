/**
 * pass@k, unbiased (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"):
 * with n samples of which c are correct, the probability that at least one of k samples drawn
 * without replacement is correct:
 *
 *   pass@k = 1 − C(n−c, k) / C(n, k)
 *
 * Computed as a product so it never forms huge binomials:
 *   C(n−c, k) / C(n, k) = Π_{i=n−c+1}^{n} (1 − k / i)     (and pass@k = 1 when n − c < k)
 */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || n < 1) throw new Error(`passAtK: n must be a positive integer, got ${n}`);
  if (!Number.isInteger(c) || c < 0 || c > n)
    throw new Error(`passAtK: c must be an integer in [0, n=${n}], got ${c}`);
  if (!Number.isInteger(k) || k < 1 || k > n)
    throw new Error(`passAtK: k must be an integer in [1, n=${n}], got ${k}`);
  if (n - c < k) return 1;
  let allWrong = 1;
  for (let i = n - c + 1; i <= n; i++) allWrong *= 1 - k / i;
  return 1 - allWrong;
}

/** Per-problem sample results: how many samples, how many fully correct, and each sample's test pass rate. */
export interface ProblemSamples {
  readonly n: number;
  readonly correct: number;
}

/** Mean pass@k over problems (each problem must have at least k samples). */
export function meanPassAtK(problems: readonly ProblemSamples[], k: number): number {
  if (problems.length === 0) throw new Error("meanPassAtK: no problems");
  return problems.reduce((s, p) => s + passAtK(p.n, p.correct, k), 0) / problems.length;
}

/** Mean fraction of tests passed, over samples (each `passed / total`, a sample with no tests counts 0). */
export function averageTestPassRate(
  samples: readonly { readonly passed: number; readonly total: number }[],
): number {
  if (samples.length === 0) throw new Error("averageTestPassRate: no samples");
  return samples.reduce((s, x) => s + (x.total > 0 ? x.passed / x.total : 0), 0) / samples.length;
}
