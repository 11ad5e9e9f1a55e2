import { describe, expect, it } from "vitest";
import { indicesByPolicy } from "../src/policy-groups.ts";

describe("indicesByPolicy", () => {
  it("groups request indices by policy: policies in order of first appearance, indices in request order", () => {
    const requests = ["b", "a", "b", "c", "a", "b"].map((policyId) => ({ policyId }));
    const groups = indicesByPolicy(requests);
    expect([...groups]).toEqual([
      ["b", [0, 2, 5]],
      ["a", [1, 4]],
      ["c", [3]],
    ]);
    expect(indicesByPolicy([]).size).toBe(0);
  });
});
