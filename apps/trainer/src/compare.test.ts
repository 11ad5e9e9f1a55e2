import { describe, expect, it } from "vitest";
import {
  type ArmResult,
  ArmResultSchema,
  armRecipe,
  compareRows,
  pairedDifferences,
  pairedRows,
  seedInterval,
  summarise,
} from "./compare.ts";
import { loadRecipeText } from "./recipe.ts";

const base = loadRecipeText(`
name: base
seed: 1
environment:
  name: plan-path
  options: { roles: compact, maxTurns: 2, rows: 6, cols: 6 }
strategy: { name: atgrpo, candidates: 4 }
train: { steps: 30, tasksPerStep: 8 }
`);

describe("compare arms", () => {
  it("single-agent GRPO: the planner alone with the team's N·T = 4 turns, K = 4 episodes per task", () => {
    const r = armRecipe(base, "grpo", 7);
    expect(r.seed).toBe(7);
    expect(r.environment.options).toMatchObject({ roles: "single", maxTurns: 4 });
    expect(r.team.specialisation).toBe("shared");
    expect(r.strategy).toMatchObject({ name: "parallel", groupSize: 4 });
    expect(r.train.tasksPerStep).toBe(8);
    expect(r.train.steps).toBe(30);
  });

  it("single-agent GRPO: demonstrations that slip in some team roles slip in the single agent's turns", () => {
    const toolTeam = (sft: string) =>
      loadRecipeText(`
name: base
environment:
  name: plan-path
  options: { roles: tool-call, maxTurns: 2 }
strategy: { name: atgrpo, candidates: 4 }
sft: ${sft}
`);
    const slips = toolTeam("{ steps: 10, mistakeRate: 0.3, mistakeRoles: [plan] }");
    expect(armRecipe(slips, "grpo", 1).sft).toMatchObject({ steps: 10, mistakeRate: 0.3 });
    expect(armRecipe(slips, "grpo", 1).sft?.mistakeRoles).toBeUndefined();
    expect(armRecipe(slips, "atgrpo-per-role", 1).sft?.mistakeRoles).toEqual(["plan"]);
    const cuts = toolTeam("{ steps: 10, mistakeRate: 0, cut: { rate: 0.6, length: 2, roles: [plan] } }");
    expect(armRecipe(cuts, "grpo", 1).sft?.cut).toEqual({ rate: 0.6, length: 2 });
    expect(armRecipe(cuts, "warm-start", 1).sft?.cut).toEqual({ rate: 0.6, length: 2, roles: ["plan"] });
  });

  it("MAGRPO gets round(8 · 16 / 40) = 3 tasks per step: N·K·(1 + K) = 40 samples per task vs N·T·K = 16", () => {
    const r = armRecipe(base, "magrpo", 1);
    expect(r.strategy).toMatchObject({ name: "magrpo", groupSize: 4, jointMode: "aligned" });
    expect(r.train.tasksPerStep).toBe(3);
    expect(r.team).toMatchObject({ specialisation: "per-role", turnOrder: "parallel" });
  });

  it("warm start only, AT-GRPO shared and per-role", () => {
    expect(armRecipe(base, "warm-start", 1).train.steps).toBe(0);
    expect(armRecipe(base, "atgrpo-shared", 1).team.specialisation).toBe("shared");
    expect(armRecipe(base, "atgrpo-per-role", 1)).toMatchObject({
      team: { specialisation: "per-role" },
      strategy: { name: "atgrpo", candidates: 4 },
    });
  });

  it("refuses a base recipe that is not AT-GRPO", () => {
    const magrpo = loadRecipeText("name: m\nenvironment: { name: plan-path }\nstrategy: { name: magrpo }\n");
    expect(() => armRecipe(magrpo, "grpo", 1)).toThrow(/must use strategy atgrpo \(got magrpo\)/);
  });
});

/** A finished arm × seed with `successes` of `tasks` held-out tasks solved (started at 10%). */
const run = (arm: ArmResult["arm"], seed: number, successes: number, tasks = 64): ArmResult => ({
  arm,
  seed,
  runId: `c-${arm}-s${seed}`,
  successRate: successes / tasks,
  successes,
  tasks,
  startSuccessRate: 0.1,
  meanTeamReturn: 0,
  samples: 1000,
  steps: 30,
  seconds: 60,
});

describe("compare statistics", () => {
  it("t-interval over seeds: [0.2, 0.3, 0.4] → 0.3 ± 4.303 · 0.1/√3", () => {
    const { mean, ci95 } = seedInterval([0.2, 0.3, 0.4]);
    expect(mean).toBeCloseTo(0.3, 12);
    expect(ci95![0]).toBeCloseTo(0.3 - (4.303 * 0.1) / Math.sqrt(3), 12);
    expect(ci95![1]).toBeCloseTo(0.3 + (4.303 * 0.1) / Math.sqrt(3), 12);
    expect(seedInterval([0.5]).ci95).toBeUndefined();
    // Rates are clipped to [0, 1]; differences of rates (a gain) to [−1, 1].
    expect(seedInterval([0.0, 0.1]).ci95![0]).toBe(0);
    expect(seedInterval([-0.1, -0.05, 0], [-1, 1]).ci95![0]).toBeCloseTo(
      -0.05 - (4.303 * 0.05) / Math.sqrt(3),
      12,
    );
    expect(seedInterval([-0.1, 0.1], [-1, 1]).ci95).toEqual([-1, 1]);
  });

  it("reads arm results stored before curves and RL time were kept", () => {
    const old = {
      arm: "grpo",
      seed: 1,
      runId: "c-grpo-s1",
      successRate: 0.5,
      successes: 32,
      tasks: 64,
      startSuccessRate: 0.4,
      meanTeamReturn: -0.2,
      samples: 3137,
      steps: 30,
      seconds: 90,
    };
    expect(ArmResultSchema.parse(old)).toEqual(old);
  });

  it("summarises per arm in the fixed arm order, pooling k/n with a Wilson interval", () => {
    const rows = summarise([run("atgrpo-per-role", 2, 32), run("grpo", 1, 8), run("atgrpo-per-role", 1, 16)]);
    expect(rows.map((r) => r.arm)).toEqual(["grpo", "atgrpo-per-role"]);
    const team = rows[1]!;
    expect(team.perSeed).toEqual([0.25, 0.5]);
    expect(team.pooled).toMatchObject({ successes: 48, tasks: 128 });
    expect(team.meanSuccess).toBeCloseTo(0.375, 12);
    expect(compareRows(rows)[1]).toMatchObject({
      seeds: 2,
      "pooled k/n": "48/128",
      "per seed %": "25.0 50.0",
    });
    // Gains paired by seed: 0.25 − 0.1 and 0.5 − 0.1; two seeds give a t-interval wider than ±1.
    expect(team.gainMean).toBeCloseTo(0.275, 12);
    expect(compareRows(rows)[1]).toMatchObject({
      "gain over start (points)": "+27.5",
      "gain 95% CI (seeds)": "[−100.0, +100.0]",
    });
    const steady = summarise([run("warm-start", 1, 8), run("warm-start", 2, 8), run("warm-start", 3, 8)]);
    // 8/64 − 0.1 on every seed: a zero-width interval.
    expect(compareRows(steady)[0]).toMatchObject({
      "gain over start (points)": "+2.5",
      "gain 95% CI (seeds)": "[+2.5, +2.5]",
    });
  });

  it("pairs the best arm with each other arm by seed, on the seeds both finished", () => {
    // Five seeds of 500 held-out tasks: a team that fails on seed 4, a steadier single agent, and
    // a team without RL that finished seeds 1–3 only.
    const team = [497, 487, 498, 360, 496].map((k, i) => run("atgrpo-shared", i + 1, k, 500));
    const single = [403, 365, 385, 407, 369].map((k, i) => run("grpo", i + 1, k, 500));
    const before = [332, 270, 279].map((k, i) => run("warm-start", i + 1, k, 500));
    const paired = pairedDifferences([...single, ...before, ...team]);
    expect(paired.map((d) => [d.arm, d.versus, d.seeds])).toEqual([
      ["atgrpo-shared", "grpo", [1, 2, 3, 4, 5]],
      ["atgrpo-shared", "warm-start", [1, 2, 3]],
    ]);
    const diffs = [0.188, 0.244, 0.226, -0.094, 0.254];
    paired[0]!.perSeed.forEach((d, i) => expect(d).toBeCloseTo(diffs[i]!, 12));
    const mean = 0.1636;
    const sd = Math.sqrt(diffs.reduce((s, d) => s + (d - mean) ** 2, 0) / 4);
    expect(paired[0]!.mean).toBeCloseTo(mean, 12);
    expect(paired[0]!.ci95![0]).toBeCloseTo(mean - (2.776 * sd) / Math.sqrt(5), 12);
    expect(paired[0]!.ci95![1]).toBeCloseTo(mean + (2.776 * sd) / Math.sqrt(5), 12);
    expect(pairedRows(paired)[1]).toEqual({
      arm: "atgrpo-shared",
      "minus arm": "warm-start",
      "paired seeds": "1,2,3",
      // (0.330 + 0.434 + 0.438) / 3 ± 4.303 · sd / √3
      "difference (points)": "+40.1",
      "95% CI (seeds)": "[+24.9, +55.3]",
      "per seed (points)": "+33.0 +43.4 +43.8",
    });
    // One arm, or arms with no seed in common: nothing to pair.
    expect(pairedDifferences(team)).toEqual([]);
    expect(pairedDifferences([run("grpo", 1, 8), run("warm-start", 2, 8)])).toEqual([]);
  });
});
