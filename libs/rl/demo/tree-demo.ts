/**
 * A rollout-tree demo with scripted policies: no model, no download, instant.
 * Two agents play sum-to-target (each says a digit per turn; the team wins by hitting the target
 * exactly). Prints the MAGRPO tree of one task and the AT-GRPO groups, as tables.
 *
 *   npx nx run rl:demo
 */
import { type Sample, samplingParams, type Team } from "@troupe/core";
import { ScriptedPolicy, sumToTargetEnv } from "@troupe/core/testing";
import { defaultAtgrpoConfig, rolloutAtgrpo } from "../src/atgrpo.ts";
import { defaultEstimationConfig, estimateAdvantages } from "../src/estimators.ts";
import { defaultMagrpoConfig, rolloutMagrpo } from "../src/magrpo.ts";
import type { RolloutContext, RolloutNode } from "../src/rollout.ts";

const env = sumToTargetEnv(["a", "b"]);
// Agent a prefers small digits, agent b large ones: the team must learn who fills the gap.
const policies = {
  a: new ScriptedPolicy("a", () => ["1", "2", "3"].map((text, i) => ({ text, weight: 3 - i }))),
  b: new ScriptedPolicy("b", () => ["2", "4", "6", "oops"].map((text, i) => ({ text, weight: i + 1 }))),
};
const task = { id: "target-7", split: "train" as const, payload: { target: 7 } };

function ctx(team: Team): RolloutContext {
  return {
    runId: "demo",
    step: 0,
    seed: 2026,
    env: env as RolloutContext["env"],
    team,
    policies,
    sampling: samplingParams({ temperature: 1, maxTokens: 4 }),
  };
}

function table(rows: Record<string, string | number>[]): string {
  if (rows.length === 0) return "(none)";
  const cols = Object.keys(rows[0]!);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i]!)).join("  ");
  return [
    line(cols),
    line(width.map((w) => "-".repeat(w))),
    ...rows.map((r) => line(cols.map((c) => String(r[c])))),
  ].join("\n");
}

const fmt = (x: number) => (Object.is(x, -0) ? 0 : x).toFixed(3);

function treeRows(
  node: RolloutNode,
  rows: Record<string, string | number>[] = [],
): Record<string, string | number>[] {
  if (node.path.length > 0) {
    rows.push({
      node: node.path.join("."),
      turn: node.turn,
      "joint action": Object.entries(node.actions)
        .map(([agent, text]) => `${agent}=${JSON.stringify(text)}`)
        .join(" "),
      "team r": node.teamReward,
      "return (a)": fmt(node.returns.a ?? 0),
      done: node.done ? (node.success ? "solved" : "failed") : "",
    });
  }
  node.children.forEach((c) => treeRows(c, rows));
  return rows;
}

function sampleRows(samples: readonly Sample[]): Record<string, string | number>[] {
  return samples.map((s) => ({
    group: s.groupKey,
    cand: s.provenance.candidate,
    text: JSON.stringify(s.completionText),
    reward: fmt(s.reward.total),
    advantage: fmt(s.advantage),
  }));
}

const parallelTeam: Team = {
  name: "pair",
  turnOrder: "parallel",
  maxTurns: 2,
  roles: [
    { id: "a", policy: "a" },
    { id: "b", policy: "b" },
  ],
};
const magrpo = await rolloutMagrpo(ctx(parallelTeam), [task], {
  ...defaultMagrpoConfig,
  groupSize: 2,
  jointMode: "aligned",
});
console.log(`MAGRPO (aligned, G=2, γ=${defaultMagrpoConfig.gamma}, T=2) on sum-to-target, target 7`);
console.log(table(treeRows(magrpo.trees[0]!)));
console.log(
  `\n${magrpo.samples.length} samples in ${new Set(magrpo.samples.map((s) => s.groupKey)).size} groups, ${magrpo.stats.leaves} leaves\n`,
);

const atgrpoConfig = { ...defaultAtgrpoConfig, candidates: 3 };
const atgrpo = await rolloutAtgrpo(
  ctx({ ...parallelTeam, turnOrder: "sequential", maxTurns: 3 }),
  [task],
  atgrpoConfig,
);
// The trainer's advantage stage, as it runs after every step's rollouts.
const atgrpoSamples = estimateAdvantages(atgrpo.samples, defaultEstimationConfig).samples;
console.log("AT-GRPO (K=3, w_team=1, argmax continues), groups keyed (task, turn, agent)");
console.log(table(sampleRows(atgrpoSamples)));
const ep = atgrpo.episodes[0]!;
console.log(
  `\nepisode: ${ep.success ? "solved" : "not solved"} in ${ep.turns} turn(s), team return ${ep.teamReturn}`,
);
