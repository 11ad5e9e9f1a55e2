import { type Completion, samplingParams, userObservation } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { enginePolicy } from "../src/policy.ts";
import type { Engine, EngineGenerateRequest } from "../src/types.ts";

describe("enginePolicy", () => {
  it("asks the engine for its policy's completions, one request per prompt with its seed", async () => {
    const calls: { requests: readonly EngineGenerateRequest[]; temperature: number }[] = [];
    const engine = {
      generate: async (requests: readonly EngineGenerateRequest[], sampling: { temperature: number }) => {
        calls.push({ requests, temperature: sampling.temperature });
        return requests.map(
          (r): Completion => ({
            text: `${r.policyId}:${r.seed}`,
            promptTokenIds: [],
            tokenIds: [],
            logprobs: [],
            finishReason: "stop",
          }),
        );
      },
    } as unknown as Engine;
    const policy = enginePolicy(engine, "writer", 3);
    expect([policy.id, policy.version]).toEqual(["writer", 3]);
    expect(enginePolicy(engine, "writer").version).toBe(0);
    const out = await policy.generate(
      [
        { observation: userObservation("a"), seed: 1 },
        { observation: userObservation("b"), seed: 2 },
      ],
      samplingParams({ temperature: 0.5 }),
    );
    expect(out.map((c) => c.text)).toEqual(["writer:1", "writer:2"]);
    expect(calls).toEqual([
      {
        requests: [
          { policyId: "writer", observation: userObservation("a"), seed: 1 },
          { policyId: "writer", observation: userObservation("b"), seed: 2 },
        ],
        temperature: 0.5,
      },
    ]);
  });
});
