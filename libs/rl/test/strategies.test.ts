/**
 * The strategy registry (strategies.ts) and what every strategy guarantees: sections parsed with
 * their defaults and former names, the named strategy run, and rollouts that are deterministic in
 * the seed and isolated from one another.
 */
import { canonicalJson, type Environment, stableHash, type Task } from "@troupe/core";
import { ScriptedPolicy, type SumToTargetState, sumToTargetEnv } from "@troupe/core/testing";
import { describe, expect, it } from "vitest";
import { rolloutAtgrpo } from "../src/atgrpo.ts";
import { rolloutGrpo } from "../src/grpo.ts";
import { defaultMagrpoConfig, type JointMode, rolloutMagrpo } from "../src/magrpo.ts";
import { runStrategy, StrategyConfigSchema, strategyNamed } from "../src/strategies.ts";
import { context, listPolicies, twoAgentTeam } from "./helpers.ts";

const env = sumToTargetEnv(["a", "b"]);
const task = (target: number, id = `t${target}`): Task<{ target: number }> => ({
  id,
  split: "train",
  payload: { target },
});
const policies = () => listPolicies(["1", "2"], ["1", "3"]);

function defaultsFor(jointMode: JointMode) {
  return { ...defaultMagrpoConfig, jointMode };
}

describe("strategy registry", () => {
  it("parses a strategy section with its defaults and reads AT-GRPO's alpha as teamWeight", () => {
    expect(StrategyConfigSchema.parse({ name: "magrpo" })).toEqual({
      name: "magrpo",
      ...defaultMagrpoConfig,
    });
    expect(StrategyConfigSchema.parse({ name: "atgrpo", alpha: 0.5 })).toMatchObject({ teamWeight: 0.5 });
    expect(StrategyConfigSchema.safeParse({ name: "ppo" }).success).toBe(false);
  });

  it("reads GRPO's former name `parallel` as `grpo`, in sections and lookups", async () => {
    const former = StrategyConfigSchema.parse({ name: "parallel", groupSize: 2 });
    expect(former).toEqual(StrategyConfigSchema.parse({ name: "grpo", groupSize: 2 }));
    expect(former).toEqual({ name: "grpo", groupSize: 2, gamma: 1, teamWeight: 1, localWeight: 0 });
    expect(strategyNamed("parallel").name).toBe("grpo");
    const out = await runStrategy(context(env, policies(), twoAgentTeam("sequential", 1)), [task(5)], former);
    expect(new Set(out.samples.map((s) => s.provenance.strategy))).toEqual(new Set(["grpo"]));
  });

  it("runs the named strategy; its samples wait for the advantage stage", async () => {
    const config = StrategyConfigSchema.parse({ name: "magrpo", groupSize: 2, jointMode: "aligned" });
    const out = await runStrategy(context(env, policies(), twoAgentTeam("parallel", 2)), [task(5)], config);
    expect(out.samples.every((s) => s.provenance.strategy === "magrpo" && !("advantage" in s))).toBe(true);
  });
});

describe("determinism and isolation", () => {
  const randomPolicies = () => ({
    a: new ScriptedPolicy("a", () => ["1", "2", "3", "4"].map((text, i) => ({ text, weight: i + 1 }))),
    b: new ScriptedPolicy("b", () => ["1", "5", "x"].map((text, i) => ({ text, weight: 3 - i }))),
  });

  it("the same seed gives the same rollouts byte for byte; another seed does not", async () => {
    const run = async (seed: number) => {
      const magrpo = await rolloutMagrpo(
        context(env, randomPolicies(), twoAgentTeam("parallel", 2), { seed }),
        [task(7), task(9)],
      );
      const atgrpo = await rolloutAtgrpo(
        context(env, randomPolicies(), twoAgentTeam("sequential", 3), { seed }),
        [task(7)],
      );
      const parallel = await rolloutGrpo(
        context(env, randomPolicies(), twoAgentTeam("sequential", 2), { seed }),
        [task(7)],
      );
      return canonicalJson([magrpo, atgrpo, parallel]);
    };
    const first = await run(7);
    expect(await run(7)).toBe(first);
    expect(await run(8)).not.toBe(first);
  });

  it("batching does not change a task's rollout (seeds come from the task, not the batch position)", async () => {
    const alone = await rolloutAtgrpo(context(env, randomPolicies(), twoAgentTeam("sequential", 3)), [
      task(9),
    ]);
    const batched = await rolloutAtgrpo(context(env, randomPolicies(), twoAgentTeam("sequential", 3)), [
      task(7),
      task(9),
    ]);
    const of = (r: typeof alone) => canonicalJson(r.samples.filter((s) => s.provenance.taskId === "t9"));
    expect(of(batched)).toBe(of(alone));
  });

  it("a step that mutates its input state throws instead of leaking into sibling branches", async () => {
    const leaky: Environment<SumToTargetState, { target: number }> = {
      ...env,
      step(state, actions) {
        const result = env.step(state, actions) as ReturnType<typeof env.step> & { state: SumToTargetState };
        (state.history as string[]).push("mutated"); // forbidden
        return result;
      },
    };
    const ctx = context(leaky, randomPolicies(), twoAgentTeam("parallel", 2));
    await expect(rolloutMagrpo(ctx, [task(9)])).rejects.toThrow(TypeError);
  });

  it("sibling states are never changed by stepping other branches (hash check, freezing off)", async () => {
    const created: { state: SumToTargetState; hash: string }[] = [];
    const recording: Environment<SumToTargetState, { target: number }> = {
      ...env,
      async step(state, actions) {
        const result = await env.step(state, actions);
        created.push({ state: result.state, hash: stableHash(result.state) });
        return result;
      },
    };
    const ctx = context(recording, randomPolicies(), twoAgentTeam("parallel", 3), { freezeStates: false });
    await rolloutMagrpo(ctx, [task(20)], { ...defaultsFor("cross"), groupSize: 2 });
    expect(created.length).toBe(4 + 16 + 64);
    for (const { state, hash } of created) expect(stableHash(state)).toBe(hash);
  });

  it("rejects a batch with a repeated task and a role without a policy", async () => {
    await expect(
      rolloutAtgrpo(context(env, randomPolicies(), twoAgentTeam("sequential", 1)), [task(3), task(3)]),
    ).rejects.toThrow(/appears twice/);
    await expect(
      rolloutAtgrpo(context(env, { a: randomPolicies().a }, twoAgentTeam("sequential", 1)), [task(3)]),
    ).rejects.toThrow(/policy "b"/);
  });
});
