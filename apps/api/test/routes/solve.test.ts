/**
 * POST /v1/solve's request: validated once against the schema whose sampling bounds are
 * solve()'s own (@troupe/teams), then reshaped into solve()'s arguments.
 */
import { SolveSamplingSchema } from "@troupe/teams";
import { describe, expect, it } from "vitest";
import { solveArguments, splitTeamRef } from "../../src/routes/solve.ts";
import { SolveRequestSchema } from "../../src/schemas.ts";

describe("the solve request", () => {
  it("accepts exactly the sampling options solve() accepts", () => {
    const body = (options: Record<string, unknown>) => ({
      team: "t",
      input: { generate: { seed: 1 } },
      options,
    });
    for (const sampling of [
      { temperature: 0 },
      { temperature: 2.5 },
      { temperature: 10 },
      { temperature: 10.5 },
      { temperature: -1 },
      { topP: 0 },
      { topP: 1 },
      { maxTokens: 4096 },
      { maxTokens: 4097 },
      { seed: 2 ** 31 },
    ]) {
      expect({ sampling, http: SolveRequestSchema.safeParse(body(sampling)).success }).toEqual({
        sampling,
        http: SolveSamplingSchema.safeParse(sampling).success,
      });
    }
  });

  it("flat HTTP options become solve()'s maxTurns and sampling", () => {
    const signal = new AbortController().signal;
    const parsed = SolveRequestSchema.parse({
      team: "t@stable",
      input: { task: { rows: 2 } },
      options: { maxTurns: 3, temperature: 0.5, seed: 9, stream: true },
    });
    expect(solveArguments(parsed, signal)).toEqual({
      input: { task: { rows: 2 } },
      solveOptions: { maxTurns: 3, sampling: { temperature: 0.5, seed: 9 }, signal },
    });
    expect(splitTeamRef(parsed.team)).toEqual({ name: "t", ref: "stable" });
    expect(splitTeamRef("t")).toEqual({ name: "t", ref: "latest" });
  });
});
