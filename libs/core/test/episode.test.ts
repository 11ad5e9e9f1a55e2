import { describe, expect, it } from "vitest";
import type { Environment } from "../src/environment.ts";
import {
  EPISODE_SEED_STREAM,
  generateForAgents,
  type RolloutContext,
  requestSeed,
  runEpisodes,
  samplingOf,
  stepState,
  summarizeEpisode,
} from "../src/episode.ts";
import { userObservation } from "../src/messages.ts";
import type { Completion, GenerationRequest, Policy, SamplingParams } from "../src/policy.ts";
import { samplingParams } from "../src/policy.ts";
import { deriveSeed } from "../src/rng.ts";
import { ScriptedPolicy } from "../src/scripted-policy.ts";
import type { Task } from "../src/task.ts";
import type { Team } from "../src/team.ts";
import { type SumToTargetPayload, type SumToTargetState, sumToTargetEnv } from "../src/toy.ts";

const env = sumToTargetEnv(["a", "b"]);
const task = (id: string, target: number): Task<SumToTargetPayload> => ({
  id,
  split: "train",
  payload: { target },
});
const team = (turnOrder: Team["turnOrder"], maxTurns = 3, policyOf = { a: "p", b: "p" }): Team => ({
  name: "t",
  roles: [
    { id: "a", policy: policyOf.a },
    { id: "b", policy: policyOf.b },
  ],
  turnOrder,
  maxTurns,
});
/** Always says `text`. */
const always = (text: string, id = "p") => new ScriptedPolicy(id, () => [{ text, weight: 1 }]);
/** Says 1, 2 or 3 uniformly, drawn from the request's seed. */
const digits = new ScriptedPolicy("p", () => ["1", "2", "3"].map((text) => ({ text, weight: 1 })));

/** Records every generate call: the policy, how many prompts, with which sampling object. */
class CountingPolicy implements Policy {
  readonly calls: { prompts: number; sampling: SamplingParams }[] = [];
  constructor(
    readonly id: string,
    private readonly inner: Policy,
  ) {}
  get version() {
    return this.inner.version;
  }
  generate(requests: readonly GenerationRequest[], sampling: SamplingParams): Promise<Completion[]> {
    this.calls.push({ prompts: requests.length, sampling });
    return this.inner.generate(requests, sampling);
  }
}

function context(
  overrides: Partial<RolloutContext<SumToTargetState, SumToTargetPayload>> = {},
): RolloutContext<SumToTargetState, SumToTargetPayload> {
  return {
    runId: "r",
    step: 3,
    seed: 11,
    env,
    team: team("sequential"),
    policies: { p: always("2") },
    sampling: samplingParams(),
    ...overrides,
  };
}

describe("runEpisodes", () => {
  it("sequential: each agent acts on the previous one's state until the target is overshot", async () => {
    // target 5, everyone says 2: a → 2, b → 4, a → 6 (over, done, team reward -1).
    const [ep] = await runEpisodes(context(), [task("t1", 5)]);
    expect(
      ep!.steps.map((s) => [s.turn, Object.keys(s.actions), s.result.state.total, s.result.teamReward]),
    ).toEqual([
      [0, ["a"], 2, 0],
      [0, ["b"], 4, 0],
      [1, ["a"], 6, -1],
    ]);
    expect(ep!.steps[1]!.acted[0]!.observation).toEqual(
      userObservation("You are b. Target 5. Total 2. Said so far: a:2. Say one digit."),
    );
    expect([ep!.done, ep!.success, ep!.judged, ep!.turns, ep!.state.total]).toEqual([
      true,
      false,
      true,
      2,
      6,
    ]);
    expect(summarizeEpisode(ep!)).toEqual({
      taskId: "t1",
      episode: 0,
      success: false,
      teamReturn: -1,
      turns: 2,
    });
  });

  it("parallel: both agents act on one state; hitting the target ends the episode in success", async () => {
    const [ep] = await runEpisodes(context({ team: team("parallel") }), [task("t1", 4)]);
    expect(ep!.steps).toHaveLength(1);
    expect(ep!.steps[0]!.actions).toEqual({ a: "2", b: "2" });
    expect(summarizeEpisode(ep!)).toEqual({
      taskId: "t1",
      episode: 0,
      success: true,
      teamReturn: 1,
      turns: 1,
    });
  });

  it("stops after maxTurns turns when the environment never ends the episode", async () => {
    const [ep] = await runEpisodes(context({ team: team("parallel", 2), policies: { p: always("x") } }), [
      task("t", 5),
    ]);
    expect([ep!.done, ep!.turns, ep!.steps.length]).toEqual([false, 2, 2]);
    expect(ep!.steps.map((s) => s.result.localRewards)).toEqual([
      { a: -0.5, b: -0.5 },
      { a: -0.5, b: -0.5 },
    ]);
  });

  it("request seeds come from (run seed, step, task, episode, turn, agent)", async () => {
    const ctx = context({ team: team("parallel", 1) });
    const episodes = await runEpisodes(ctx, [task("t1", 9), task("t2", 9)], 2);
    for (const ep of episodes) {
      for (const acted of ep.steps[0]!.acted) {
        const expected = deriveSeed(11, EPISODE_SEED_STREAM, 3, ep.task.id, ep.index, 0, acted.agent);
        expect(acted.seed).toBe(expected);
        expect(requestSeed(ctx, EPISODE_SEED_STREAM, ep.task.id, ep.index, 0, acted.agent)).toBe(expected);
      }
    }
  });

  it("an episode does not depend on which other tasks share its batch", async () => {
    const ctx = context({ policies: { p: digits }, team: team("sequential", 4) });
    const texts = (ep: { steps: { actions: Record<string, string> }[] }) => ep.steps.map((s) => s.actions);
    const together = await runEpisodes(ctx, [task("t1", 9), task("t2", 9)], 3);
    const alone = await runEpisodes(ctx, [task("t2", 9)], 3);
    expect(alone.map(texts)).toEqual(together.slice(3).map(texts));
    // the three episodes of one task differ (their seeds do), or the group would be useless
    expect(new Set(together.slice(0, 3).map((ep) => JSON.stringify(texts(ep)))).size).toBeGreaterThan(1);
  });

  it("batches: one generate per policy per stage over every live episode", async () => {
    const p = new CountingPolicy("p", always("1"));
    const q = new CountingPolicy("q", always("1", "q"));
    const ctx = context({ team: team("parallel", 2, { a: "p", b: "q" }), policies: { p, q } });
    await runEpisodes(ctx, [task("t1", 9), task("t2", 9)], 2);
    expect(p.calls.map((c) => c.prompts)).toEqual([4, 4]);
    expect(q.calls.map((c) => c.prompts)).toEqual([4, 4]);
  });

  it("states are deep-frozen unless the context opts out", async () => {
    const [frozen] = await runEpisodes(context(), [task("t", 5)]);
    expect(Object.isFrozen(frozen!.state)).toBe(true);
    expect(Object.isFrozen(frozen!.state.history)).toBe(true);
    const [thawed] = await runEpisodes(context({ freezeStates: false }), [task("t", 5)]);
    expect(Object.isFrozen(thawed!.state)).toBe(false);
  });

  it("hooks see the start, every stage's requests and every step as it happens", async () => {
    const seen: string[] = [];
    await runEpisodes(context(), [task("t", 5)], 1, {
      onStart: (eps) => seen.push(`start ${eps.length}`),
      beforeGenerate: (requests) => seen.push(`ask ${requests.map((r) => r.agent).join()}`),
      onStep: (ep, step) => seen.push(`step ${step.turn} total ${ep.state.total}`),
      guard: (work) => {
        seen.push("guard");
        return work;
      },
    });
    expect(seen).toEqual([
      "start 1",
      "ask a",
      "guard",
      "guard",
      "step 0 total 2",
      "ask b",
      "guard",
      "guard",
      "step 0 total 4",
      "ask a",
      "guard",
      "guard",
      "step 1 total 6",
    ]);
  });

  it.each([
    [
      { policies: { q: always("1", "q") } },
      [task("t", 5)],
      1,
      'role "a" uses policy "p", which is not in the policy set',
    ],
    [
      { roleSampling: { z: samplingParams() } },
      [task("t", 5)],
      1,
      'roleSampling names "z", which is no role of team "t" (roles: a, b)',
    ],
    [{}, [task("t", 5), task("t", 6)], 1, 'task "t" appears twice in one rollout batch'],
    [{}, [task("t", 5)], 0, "episodes per task must be a positive integer, got 0"],
    [
      { team: team("parallel", 1, { a: "p", b: "p" }), env: sumToTargetEnv(["a"]) },
      [task("t", 5)],
      1,
      "unknown roles: b",
    ],
  ] as const)("refuses a bad rollout: %#", async (overrides, tasks, episodesPerTask, error) => {
    await expect(runEpisodes(context(overrides as never), tasks, episodesPerTask)).rejects.toThrow(error);
  });
});

describe("the pieces of a step", () => {
  it("samplingOf: a role's own sampling, else the team's", () => {
    const cold = samplingParams({ temperature: 0 });
    const ctx = { sampling: samplingParams(), roleSampling: { b: cold } };
    expect(samplingOf(ctx, "a")).toBe(ctx.sampling);
    expect(samplingOf(ctx, "b")).toBe(cold);
  });

  it("generateForAgents: one call per (policy, sampling), answers in request order", async () => {
    const p = new CountingPolicy(
      "p",
      new ScriptedPolicy("p", (obs) => [{ text: obs.messages[0]!.content, weight: 1 }]),
    );
    const cold = samplingParams({ temperature: 0 });
    const ctx = context({ policies: { p }, roleSampling: { b: cold } }) as RolloutContext;
    const requests = ["a", "b", "a"].map((agent, i) => ({
      agent,
      observation: userObservation(`${agent}${i}`),
      seed: i,
    }));
    const out = await generateForAgents(ctx, requests);
    expect(out.map((c) => c.text)).toEqual(["a0", "b1", "a2"]);
    expect(p.calls.map((c) => [c.prompts, c.sampling === cold])).toEqual([
      [2, false],
      [1, true],
    ]);
  });

  it("generateForAgents refuses a policy that answers the wrong number of prompts or log-probs", async () => {
    const short: Policy = { id: "p", version: 0, generate: async () => [] };
    const request = { agent: "a", observation: userObservation("x"), seed: 0 };
    await expect(
      generateForAgents(context({ policies: { p: short } }) as RolloutContext, [request]),
    ).rejects.toThrow('policy "p" returned 0 completions for 1 prompts');
    const ragged: Policy = {
      id: "p",
      version: 0,
      generate: async () => [
        { text: "x", promptTokenIds: [], tokenIds: [120], logprobs: [], finishReason: "stop" },
      ],
    };
    await expect(
      generateForAgents(context({ policies: { p: ragged } }) as RolloutContext, [request]),
    ).rejects.toThrow('policy "p": 0 log-probs for 1 tokens');
  });

  it("stepState refuses a non-finite reward, naming the environment and the reward", async () => {
    const broken: Environment<SumToTargetState, SumToTargetPayload> = {
      ...env,
      name: "broken",
      step: (state) => ({ state, teamReward: 0, localRewards: { b: Number.NaN }, done: false }),
    };
    const state = { target: 1, total: 0, steps: 0, history: [] };
    await expect(stepState(context({ env: broken }), state, { a: "1" })).rejects.toThrow(
      'environment "broken" returned a non-finite b: NaN',
    );
    const ok = await stepState(context(), state, { a: "1" });
    expect([ok.teamReward, ok.success, Object.isFrozen(ok.state)]).toEqual([1, true, true]);
  });
});
