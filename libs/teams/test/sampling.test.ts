import { samplingParams, type Team } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { requestSampling } from "../src/sampling.ts";

/** planner and fixer share the policy `shared`; critic has `judge`. */
const team: Team = {
  ...{ name: "t", turnOrder: "sequential", maxTurns: 2 },
  roles: Object.entries({ planner: "shared", fixer: "shared", critic: "judge" }).map(([id, policy]) => ({
    id,
    policy,
  })),
};
const shared = samplingParams({ temperature: 1, topP: 1, maxTokens: 8 });
const judge = samplingParams({ temperature: 0.5, topP: 0.9, maxTokens: 4 });
const fixerOwn = samplingParams({ temperature: 0, topP: 1, maxTokens: 16 });

describe("requestSampling", () => {
  it("a role's own sampling, else its policy's, the request's overrides on top of either", () => {
    const { sampling, roleSampling } = requestSampling(
      { sampling: { shared, judge }, roleSampling: { fixer: fixerOwn } },
      team,
      { temperature: 0.7 },
    );
    expect(roleSampling.planner).toEqual({ ...shared, temperature: 0.7 });
    expect(roleSampling.fixer).toEqual({ ...fixerOwn, temperature: 0.7 });
    expect(roleSampling.critic).toEqual({ ...judge, temperature: 0.7 });
    expect(sampling).toBe(roleSampling.planner);
  });

  it("roles of one policy share one params object (and so the policy's batch)", () => {
    const { roleSampling } = requestSampling({ sampling: { shared, judge } }, team, {});
    expect(roleSampling.planner).toBe(roleSampling.fixer);
    expect(roleSampling.planner).toEqual(shared);
    expect(roleSampling.planner).not.toBe(shared); // a copy: the manifest's params are never changed
  });
});
