/**
 * Sampling per role: an agent whose role samples differently gets its own `generate` call with its
 * own parameters, even when it shares the policy, and its samples record what they were drawn with.
 */
import {
  type Completion,
  type GenerationRequest,
  type Policy,
  runEpisodes,
  type SamplingParams,
  samplingParams,
  type Team,
} from "@troupe/core";
import { sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { runStrategy, StrategyConfigSchema } from "../src/strategies.ts";
import { context } from "./helpers.ts";

/** Says "1" to every request and records each call: how many prompts, at which temperature and length. */
class RecordingPolicy implements Policy {
  readonly calls: { prompts: number; temperature: number; maxTokens: number }[] = [];
  constructor(
    readonly id: string,
    readonly version = 0,
  ) {}
  async generate(requests: readonly GenerationRequest[], sampling: SamplingParams): Promise<Completion[]> {
    this.calls.push({
      prompts: requests.length,
      temperature: sampling.temperature,
      maxTokens: sampling.maxTokens,
    });
    return requests.map(() => ({
      text: "1",
      tokenIds: [49],
      logprobs: [-0.1],
      promptTokenIds: [1],
      finishReason: "stop",
    }));
  }
}

const sharedTeam: Team = {
  name: "pair",
  turnOrder: "parallel",
  maxTurns: 1,
  roles: [
    { id: "a", policy: "shared" },
    { id: "b", policy: "shared" },
  ],
};
const tasks = [
  { id: "t9", split: "train" as const, payload: { target: 9 } },
  { id: "t8", split: "train" as const, payload: { target: 8 } },
];
const bSampling = samplingParams({ temperature: 0.3, maxTokens: 4 });

describe("sampling per role", () => {
  it("gives a role with its own sampling its own call, and the others one call together", async () => {
    const policy = new RecordingPolicy("shared");
    const env = sumToTargetEnv();
    await runEpisodes(
      context(env, { shared: policy }, sharedTeam, { roleSampling: { b: bSampling } }),
      tasks,
    );
    expect(policy.calls).toEqual([
      { prompts: 2, temperature: 1, maxTokens: 8 },
      { prompts: 2, temperature: 0.3, maxTokens: 4 },
    ]);

    const plain = new RecordingPolicy("shared");
    await runEpisodes(context(env, { shared: plain }, sharedTeam), tasks);
    expect(plain.calls).toEqual([{ prompts: 4, temperature: 1, maxTokens: 8 }]);
  });

  it("records each agent's own sampling in its samples' provenance", async () => {
    const policy = new RecordingPolicy("shared");
    const out = await runStrategy(
      context(sumToTargetEnv(), { shared: policy }, sharedTeam, { roleSampling: { b: bSampling } }),
      tasks,
      StrategyConfigSchema.parse({ name: "parallel", groupSize: 2 }),
    );
    const byAgent = (agent: string) => out.samples.filter((s) => s.provenance.agent === agent);
    expect(byAgent("a").length).toBe(4);
    expect(byAgent("b").length).toBe(4);
    for (const s of byAgent("a")) expect(s.provenance.sampling).toEqual(samplingParams({ maxTokens: 8 }));
    for (const s of byAgent("b")) expect(s.provenance.sampling).toEqual(bSampling);
  });

  it("refuses a role the team does not have, naming it", async () => {
    const ctx = context(sumToTargetEnv(), { shared: new RecordingPolicy("shared") }, sharedTeam, {
      roleSampling: { c: bSampling },
    });
    await expect(runEpisodes(ctx, tasks)).rejects.toThrow(
      'roleSampling names "c", which is no role of team "pair" (roles: a, b)',
    );
  });
});
