/**
 * The table of docs/environments.md ("Cheap policies under `paper` and `strict`"): every policy of
 * cheap-policies.ts over all 164 HumanEval problems, through the environments, under both
 * rewards; mean reward and how many problems get full marks. Prints markdown rows.
 *
 *   npx tsx --conditions=@troupe/source libs/envs/test/coding/reward-table.ts
 *
 * About 2,600 sandboxed runs (the mutants of each problem are computed once): a few minutes at
 * the sandbox's concurrency (one run per core).
 */
import { createSandbox } from "@troupe/sandbox";
import { type CodingReward, coderTesterEnv, loadHumanEval } from "../../src/coding/index.ts";
import {
  AUX_MAIN_POLICIES,
  type PolicyScore,
  scoreAuxMain,
  scoreTester,
  TESTER_POLICIES,
} from "./cheap-policies.ts";

const runner = await createSandbox();
const problems = await loadHumanEval();
const started = performance.now();
const REWARDS: readonly CodingReward[] = ["paper", "strict"];

const row = (team: string, scores: readonly PolicyScore[]) =>
  `| ${team} | ${scores[0]!.policy} | ${scores.map((s) => `${s.mean.toFixed(3)} | ${s.full}`).join(" | ")} |`;

const rows: string[] = [];
for (const policy of AUX_MAIN_POLICIES) {
  const scores = [];
  for (const reward of REWARDS) scores.push(await scoreAuxMain(runner, problems, policy, reward));
  rows.push(row("helper + main (max 4)", scores));
  console.error(rows.at(-1));
}
const testerScores = new Map<string, PolicyScore[]>();
for (const reward of REWARDS) {
  const env = coderTesterEnv({ runner, reward });
  for (const policy of TESTER_POLICIES) {
    const score = await scoreTester(env, reward, problems, policy);
    testerScores.set(policy.name, [...(testerScores.get(policy.name) ?? []), score]);
  }
}
for (const scores of testerScores.values()) rows.push(row("coder + tester: tester (max 1)", scores));

console.log(
  `over ${problems.length} HumanEval problems, ${Math.round((performance.now() - started) / 1000)} s`,
);
console.log("| team | policy | paper: mean | paper: full marks | strict: mean | strict: full marks |");
console.log("|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
process.exit(0);
