/**
 * What a rollout records and how the episode runner serves it: each agent's own sampling (a role
 * with its own gets its own `generate` call, even on a shared policy, and its samples record what
 * they were drawn with), and the runner's hooks (every step reported as it happens, every request
 * seen first, the work wrapped).
 */
import {
  type Completion,
  type GenerationRequest,
  type Policy,
  runEpisodes,
  type SamplingParams,
  samplingParams,
} from "@troupe/core";
import { sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { checkCount } from "../src/rollout.ts";
import { runStrategy, StrategyConfigSchema } from "../src/strategies.ts";
import { context, listPolicies, sumTask, twoAgentTeam } from "./helpers.ts";

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

/** Both roles on one policy, "shared". */
const sharedTeam = twoAgentTeam("parallel", 1, { a: "shared", b: "shared" });
const tasks = [sumTask(9), sumTask(8)];
const bSampling = samplingParams({ temperature: 0.3, maxTokens: 4 });

const env = sumToTargetEnv(["a", "b"]);
const policies = () => listPolicies(["1", "2"], ["1", "3"]);

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
      StrategyConfigSchema.parse({ name: "grpo", groupSize: 2 }),
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

describe("episode runner", () => {
  it("reports every step as it happens, sees every request first and wraps the work", async () => {
    const seen: string[] = [];
    let guarded = 0;
    const [episode] = await runEpisodes(
      context(env, policies(), twoAgentTeam("sequential", 3)),
      [sumTask(5)],
      1,
      {
        onStart: ([ep]) => seen.push(`start ${ep!.task.id}`),
        beforeGenerate: (requests) => seen.push(`ask ${requests.map((r) => r.agent).join(",")}`),
        guard: (work) => {
          guarded++;
          return work;
        },
        onStep: (_, step) => seen.push(`step ${step.turn} ${Object.entries(step.actions).join(",")}`),
      },
    );
    // a says "1" (total 1), b says "1" (2), a "1" (3), b "1" (4), a "1" (5 = target, done).
    expect(seen).toEqual([
      "start t5",
      "ask a",
      "step 0 a,1",
      "ask b",
      "step 0 b,1",
      "ask a",
      "step 1 a,1",
      "ask b",
      "step 1 b,1",
      "ask a",
      "step 2 a,1",
    ]);
    expect(guarded).toBe(10); // a generation and an environment step per stage
    expect(episode).toMatchObject({ done: true, success: true, judged: true, turns: 3 });
  });
});

describe("checkCount", () => {
  it("passes whole numbers from the minimum up and names the strategy, the setting and the value otherwise", () => {
    expect(() => checkCount("grpo", "groupSize", 1, 1)).not.toThrow();
    expect(() => checkCount("magrpo", "groupSize", 5, 2)).not.toThrow();
    expect(() => checkCount("grpo", "groupSize", 0, 1)).toThrow(
      "grpo: groupSize must be a positive integer, got 0",
    );
    expect(() => checkCount("atgrpo", "candidates", 1.5, 1)).toThrow(
      "atgrpo: candidates must be a positive integer, got 1.5",
    );
    expect(() => checkCount("magrpo", "groupSize", 1, 2, "a group baseline needs siblings")).toThrow(
      "magrpo: groupSize must be an integer ≥ 2 (a group baseline needs siblings), got 1",
    );
  });
});
