/**
 * The table of docs/environments.md ("Cheap policies under `paper` and `strict`"): every policy of
 * cheap-policies.ts over the HumanEval problems, through the environments, under both rewards;
 * mean reward and how many problems get full marks. Prints markdown rows.
 *
 *   npx tsx --conditions=@troupe/source libs/envs/test/coding/reward-table.ts [--first N]
 *
 * `--first N` scores the first N problems only (HumanEval/0 … N−1). All 164: about 9,000 sandboxed
 * runs (the mutants of each problem are computed once), tens of minutes at the sandbox's
 * concurrency (one run per core).
 */
import { parseArgs } from "node:util";
import { createSandbox } from "@troupe/sandbox";
import { type CodingReward, coderTesterEnv, loadHumanEval } from "../../src/coding/index.ts";
import {
  AUX_MAIN_ATTACKS,
  AUX_MAIN_POLICIES,
  type AuxMainPolicy,
  type PolicyScore,
  scoreAuxMain,
  scoreTester,
  TESTER_POLICIES,
  TESTER_STASHES,
} from "./cheap-policies.ts";

const { values } = parseArgs({ options: { first: { type: "string" } } });
const runner = await createSandbox();
const all = await loadHumanEval();
const problems = values.first === undefined ? all : all.slice(0, Number(values.first));
const started = performance.now();
const REWARDS: readonly CodingReward[] = ["paper", "strict"];

const row = (team: string, scores: readonly PolicyScore[]) =>
  `| ${team} | ${scores[0]!.policy} | ${scores.map((s) => `${s.mean.toFixed(3)} | ${s.full}`).join(" | ")} |`;

const rows: string[] = [];
const auxMain = async (team: string, policies: readonly AuxMainPolicy[]) => {
  for (const policy of policies) {
    const scores = [];
    for (const reward of REWARDS) scores.push(await scoreAuxMain(runner, problems, policy, reward));
    rows.push(row(team, scores));
    console.error(rows.at(-1));
  }
};
await auxMain("helper + main", AUX_MAIN_POLICIES);
for (const { group, policies } of AUX_MAIN_ATTACKS) await auxMain(`helper + main (${group})`, policies);
const testerScores = new Map<string, PolicyScore[]>();
for (const reward of REWARDS) {
  const env = coderTesterEnv({ runner, reward });
  for (const policy of [...TESTER_POLICIES, ...TESTER_STASHES]) {
    const score = await scoreTester(env, reward, problems, policy);
    testerScores.set(policy.name, [...(testerScores.get(policy.name) ?? []), score]);
    console.error(`${reward} ${policy.name}: ${score.mean.toFixed(3)} (${score.full} full)`);
  }
}
for (const scores of testerScores.values()) rows.push(row("coder + tester (tester)", scores));

console.log(
  `over ${problems.length} HumanEval problems, ${Math.round((performance.now() - started) / 1000)} s`,
);
console.log(
  "| team | policy | `paper`: mean | `paper`: full marks | `strict`: mean | `strict`: full marks |",
);
console.log("|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
process.exit(0);
