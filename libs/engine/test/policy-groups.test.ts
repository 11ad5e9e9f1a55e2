import { describe, expect, it } from "vitest";
import { generateByPolicy, indicesByPolicy } from "../src/policy-groups.ts";

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

describe("generateByPolicy", () => {
  const requests = ["b", "a", "b", "a"].map((policyId, i) => ({ policyId, seed: i }));

  it("serves each policy once with its requests in order and puts every completion back in its place", async () => {
    const served: string[] = [];
    const out = await generateByPolicy(
      requests,
      () => {},
      async (policyId, own) => {
        served.push(`${policyId}: ${own.map((r) => r.seed).join(",")}`);
        return own.map((r) => `${policyId}${r.seed}`);
      },
    );
    expect(served).toEqual(["b: 0,2", "a: 1,3"]);
    expect(out).toEqual(["b0", "a1", "b2", "a3"]);
  });

  it("checks every policy before serving any, and refuses a short answer", async () => {
    let served = false;
    await expect(
      generateByPolicy(
        requests,
        (policyId) => {
          if (policyId === "a") throw new Error('no policy "a"');
        },
        async (_, own) => {
          served = true;
          return own.map(() => "x");
        },
      ),
    ).rejects.toThrow('no policy "a"');
    expect(served).toBe(false);
    await expect(
      generateByPolicy(
        requests,
        () => {},
        async () => ["x"],
      ),
    ).rejects.toThrow('policy "b": 1 completions for 2 requests');
  });
});
