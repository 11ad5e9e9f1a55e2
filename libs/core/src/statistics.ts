/** The one arithmetic mean every package uses (rewards, returns, losses, success rates). */

/**
 * x̄ = Σx / n of a non-empty list, summed left to right. A mean of nothing is no number: an empty
 * list is an Error, so a caller that can have none says what it reports then.
 */
export function mean(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error("mean of an empty list");
  let sum = 0;
  for (const x of xs) sum += x;
  return sum / xs.length;
}
