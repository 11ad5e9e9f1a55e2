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
