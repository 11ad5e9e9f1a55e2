/**
 * What one `strict` coding reward costs, per environment step: helper + main with a team whose
 * every test passes (so the counterfactual runs happen: the canonical solution as `aux`, main
 * passing its answer on), and the tester's reward for the canonical tester (the hidden tests as
 * asserts, run against the reference and each of its mutants). Mutants are computed before the
 * clock starts. Sequential steps (no queueing), medians over the first N problems.
 *
 *   npx tsx --conditions=@troupe/source libs/envs/bench/strict-reward-cost.ts [--problems 20]
 *
 * Run it in two checkouts alternately to compare designs; the machine's load is printed.
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import type { Task } from "@troupe/core";
import { createSandbox } from "@troupe/sandbox";
import { auxMainEnv, type CodingProblem, coderTesterEnv, loadHumanEval } from "../src/coding/index.ts";

const { values } = parseArgs({ options: { problems: { type: "string" } } });
const count = Number(values.problems ?? 20);
if (!Number.isInteger(count) || count < 1) {
  console.error("bench: --problems must be a positive integer");
  process.exit(2);
}
const runner = await createSandbox();
const problems = (await loadHumanEval()).slice(0, count);
const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;
const task = (p: CodingProblem): Task<CodingProblem> => ({ id: p.taskId, split: "test", payload: p });
const asAux = (p: CodingProblem) =>
  `${p.prompt}${p.canonicalSolution}`.replace(new RegExp(`\\b${p.entryPoint}\\b`, "g"), "aux");
const asAsserts = (p: CodingProblem) => {
  const lines = p.test.split("\n");
  const at = lines.findIndex((l) => /^def check\(candidate\):/.test(l));
  const body = lines.slice(at + 1).filter((l) => l.trim() !== "");
  return [
    ...lines.slice(0, at),
    ...body.map((l) => l.replace(/^ {4}/, "").replace(/\bcandidate\b/g, p.entryPoint)),
  ].join("\n");
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

const auxMain = auxMainEnv({ runner, reward: "strict" });
const tester = coderTesterEnv({ runner, reward: "strict" });
// Warm the mutant cache: one tester step per problem, not timed.
for (const p of problems) await tester.step(await tester.reset(task(p), 0), { tester: fence("assert True") });

const times: Record<string, number[]> = { "helper + main (strict)": [], "tester (strict)": [] };
const load = loadavg()[0]!;
for (const p of problems) {
  let t0 = performance.now();
  const main = `def ${p.entryPoint}(*args):\n    v = aux(*args)\n    w = v\n    return w\n`;
  await auxMain.step(await auxMain.reset(task(p), 0), { helper: fence(asAux(p)), main: fence(main) });
  times["helper + main (strict)"]!.push(performance.now() - t0);
  t0 = performance.now();
  await tester.step(await tester.reset(task(p), 0), { tester: fence(asAsserts(p)) });
  times["tester (strict)"]!.push(performance.now() - t0);
}
console.log(
  `${problems.length} problems, load average ${load.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end`,
);
for (const [name, xs] of Object.entries(times))
  console.log(`${name}: median ${median(xs).toFixed(0)} ms a step`);
process.exit(0);
