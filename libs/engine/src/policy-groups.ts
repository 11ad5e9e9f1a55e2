/**
 * Engines serve a generate call one policy (one set of weights, one tokenizer) at a time: the
 * requests are grouped by policy, and each policy's completions go back to its requests' places.
 */
import type { PolicyId } from "@troupe/core";

/**
 * The indices of `requests` by policy: policies in order of first appearance, each one's indices in
 * request order.
 */
export function indicesByPolicy(
  requests: readonly { readonly policyId: PolicyId }[],
): Map<PolicyId, number[]> {
  const groups = new Map<PolicyId, number[]>();
  requests.forEach((r, i) => {
    const indices = groups.get(r.policyId);
    if (indices === undefined) groups.set(r.policyId, [i]);
    else indices.push(i);
  });
  return groups;
}

/**
 * Serves a generate call one policy at a time: every policy is checked by `check` before any work
 * starts, then `serve` gets each policy's requests (in request order) and returns their completions
 * in that order; each completion goes back to its request's place.
 */
export async function generateByPolicy<R extends { readonly policyId: PolicyId }, C>(
  requests: readonly R[],
  check: (policyId: PolicyId) => void,
  serve: (policyId: PolicyId, requests: readonly R[]) => Promise<readonly C[]>,
): Promise<C[]> {
  const byPolicy = indicesByPolicy(requests);
  for (const policyId of byPolicy.keys()) check(policyId);
  const results: C[] = new Array(requests.length);
  for (const [policyId, indices] of byPolicy) {
    const completions = await serve(
      policyId,
      indices.map((i) => requests[i]!),
    );
    if (completions.length !== indices.length)
      throw new Error(
        `policy "${policyId}": ${completions.length} completions for ${indices.length} requests`,
      );
    indices.forEach((i, k) => {
      results[i] = completions[k]!;
    });
  }
  return results;
}
