import { deepFreeze, Rng } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { loadWriting, WRITING_AGENTS, writingEnv, writingTasks } from "../../src/writing/index.ts";

describe("writing environments", () => {
  it("one parallel step: team = tiered reward, local = own length bound", async () => {
    const env = writingEnv("tldr");
    const [task] = writingTasks(await loadWriting("tldr"), { testFraction: 0 }).train;
    const s0 = deepFreeze(await env.reset(task!, 0));
    expect(env.observe(s0, "concise").messages[0]!.content).toContain("TL;DR");
    const r = await env.step(s0, {
      concise: "alpha beta gamma delta epsilon zeta eta theta",
      detailed: "alpha iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega however",
    });
    expect(r.teamReward).toBeCloseTo(2.76, 12);
    expect(r).toMatchObject({ done: true, success: true, localRewards: { concise: 0.5, detailed: 0.5 } });
    await expect(async () => env.step(r.state, {})).rejects.toThrow(/finished episode/);
  });

  it("random policy over all sample tasks: rewards within bounds", async () => {
    const rng = new Rng(11);
    const vocab =
      "the model writes however for example therefore data team reward cat dog run fast slow".split(" ");
    const text = () => Array.from({ length: rng.intBetween(0, 300) }, () => rng.pick(vocab)).join(" ");
    for (const kind of ["tldr", "arxiv"] as const) {
      const env = writingEnv(kind);
      const problems = await loadWriting(kind);
      const [a, b] = WRITING_AGENTS[kind];
      for (let i = 0; i < 60; i++) {
        const problem = problems[i % problems.length]!;
        const s = deepFreeze(await env.reset({ id: problem.id, split: "train", payload: problem }, i));
        const r = await env.step(s, { [a]: text(), [b]: text() });
        expect(r.teamReward).toBeGreaterThanOrEqual(env.rewardBounds!.team[0]);
        expect(r.teamReward).toBeLessThanOrEqual(env.rewardBounds!.team[1]);
        for (const v of Object.values(r.localRewards)) {
          expect(v).toBeGreaterThanOrEqual(env.rewardBounds!.local[0]);
          expect(v).toBeLessThanOrEqual(env.rewardBounds!.local[1]);
        }
      }
    }
  });

  it("rejects a task of the other kind", async () => {
    const [p] = await loadWriting("arxiv");
    expect(() => writingEnv("tldr").reset({ id: p!.id, split: "train", payload: p! }, 0)).toThrow(
      /is a arxiv task/,
    );
  });
});
