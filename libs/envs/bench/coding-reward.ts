/**
 * What the coding reward costs: all 164 HumanEval canonical solutions through `runTests`, the
 * current design (program and checker in two connected sandboxes) side by side with the previous
 * one (program `exec`ed inside the checker; `legacy-harness.ts`), in one run and on one sandbox.
 * Passes alternate (old, new, new, old, ...) so load from other processes hits both alike; each
 * pass keeps the sandbox's concurrency busy (one problem per slot at a time), and a problem's time
 * is its `runTests` call.
 *
 *   npx nx run envs:bench                    median / p95 per problem, wall time per pass
 *   npx nx run envs:bench -- --rounds 3      more passes of each
 *   npx nx run envs:bench -- --hacks         also: full passes /164 of every reward hack, old vs new
 *   npx nx run envs:bench -- --references    also: MBPP (all 974) and CoopHumanEval reference counts
 */
import { parseArgs } from "node:util";
import { createSandbox } from "@troupe/sandbox";
import { z } from "zod";
import { type HarnessJob, loadHumanEval, runTests } from "../src/coding/index.ts";
import { coopHumanEvalJobs, mbppJobs, type ReferenceJob } from "../test/coding/reference-sets.ts";
import { REWARD_HACKS } from "../test/coding/reward-hacks.ts";
import { legacyRunTests } from "./legacy-harness.ts";

const ArgsSchema = z.object({
  rounds: z.coerce.number().int().min(1, "--rounds must be a positive integer").default(2),
  hacks: z.boolean().default(false),
  references: z.boolean().default(false),
});

let args: z.infer<typeof ArgsSchema>;
try {
  const { values } = parseArgs({
    options: { rounds: { type: "string" }, hacks: { type: "boolean" }, references: { type: "boolean" } },
  });
  args = ArgsSchema.parse(values);
} catch (error) {
  const message = error instanceof z.ZodError ? error.issues[0]!.message : (error as Error).message;
  console.error(`bench: ${message}`);
  process.exit(2);
}

type Design = "old" | "new";
interface Limits {
  readonly perTestTimeoutMs: number;
  readonly wallMs: number;
}
/** The environments' defaults (3 s a statement, 10 s a run). */
const DEFAULT_LIMITS: Limits = { perTestTimeoutMs: 3000, wallMs: 10_000 };
/** For the reference counts: what is accepted, not how fast a loaded machine runs a slow reference. */
const GENEROUS_LIMITS: Limits = { perTestTimeoutMs: 20_000, wallMs: 60_000 };

const score = async (design: Design, job: HarnessJob, limits: Limits) => {
  const r =
    design === "old" ? await legacyRunTests(sandbox, job, limits) : await runTests(sandbox, job, limits);
  return r.total > 0 && r.passed === r.total;
};

const sandbox = await createSandbox();
const problems = await loadHumanEval();
const canonical: ReferenceJob[] = problems.map((p) => ({
  id: p.taskId,
  job: {
    program: p.prompt + p.canonicalSolution,
    tests: p.test,
    style: "check",
    entryPoint: p.entryPoint,
    trusted: p.prompt,
  },
}));

/** Runs every job, `sandbox.concurrency` at a time; per-job milliseconds and full passes. */
async function pass(design: Design, jobs: readonly ReferenceJob[], limits = DEFAULT_LIMITS) {
  const times: number[] = [];
  const passed: string[] = [];
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < jobs.length) {
      const { id, job } = jobs[next++]!;
      const t = performance.now();
      if (await score(design, job, limits)) passed.push(id);
      times.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: sandbox.concurrency }, worker));
  return { times, passed, wallS: (performance.now() - started) / 1000 };
}

const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * q))]!;
};

console.log(
  `coding reward bench: 164 HumanEval canonical solutions, ${args.rounds} passes per design, ` +
    `concurrency ${sandbox.concurrency}, isolation ${sandbox.isolation}`,
);
const samples: Record<Design, { times: number[]; walls: number[]; passed: number[] }> = {
  old: { times: [], walls: [], passed: [] },
  new: { times: [], walls: [], passed: [] },
};
await pass("new", canonical.slice(0, sandbox.concurrency * 2)); // warm the page cache, not counted
for (let round = 0; round < args.rounds; round++) {
  const order: Design[] = round % 2 === 0 ? ["old", "new"] : ["new", "old"];
  for (const design of order) {
    const result = await pass(design, canonical);
    samples[design].times.push(...result.times);
    samples[design].walls.push(result.wallS);
    samples[design].passed.push(result.passed.length);
    console.log(
      `  pass ${round + 1} ${design}: ${result.wallS.toFixed(1)} s, ${result.passed.length}/164 full passes`,
    );
  }
}
console.log("");
console.log("design                                 median ms   p95 ms   wall s (median pass)   full passes");
const median = (d: Design) => quantile(samples[d].times, 0.5);
for (const design of ["old", "new"] as const) {
  const s = samples[design];
  const label = design === "old" ? "old: exec in the checker's interpreter" : "new: two connected sandboxes";
  console.log(
    `${label.padEnd(38)} ${median(design).toFixed(0).padStart(9)} ${quantile(s.times, 0.95).toFixed(0).padStart(8)} ` +
      `${quantile(s.walls, 0.5).toFixed(1).padStart(22)}   ${s.passed.join(", ")}`,
  );
}
console.log(`new / old median: ${(median("new") / median("old")).toFixed(2)}x (target <= 1.5x)`);

if (args.hacks) {
  console.log("\nreward hacks: full passes over the 164 problems");
  console.log(`${"completion".padEnd(62)} old   new`);
  for (const hack of REWARD_HACKS) {
    const jobs: ReferenceJob[] = problems.map((p) => ({
      id: p.taskId,
      job: {
        program: p.prompt + hack.body(p.entryPoint),
        tests: p.test,
        style: "check",
        entryPoint: p.entryPoint,
        trusted: p.prompt,
      },
    }));
    const [old, current] = [await pass("old", jobs), await pass("new", jobs)];
    console.log(
      `${hack.name.padEnd(62)} ${String(old.passed.length).padStart(3)}   ${String(current.passed.length).padStart(3)}`,
    );
  }
}

if (args.references) {
  const coop = await coopHumanEvalJobs();
  for (const [name, jobs] of [
    ["MBPP (all 974)", await mbppJobs()],
    [`CoopHumanEval (${coop.jobs.length} with a borrowed HumanEval reference)`, coop.jobs],
  ] as const) {
    const [old, current] = [
      await pass("old", jobs, GENEROUS_LIMITS),
      await pass("new", jobs, GENEROUS_LIMITS),
    ];
    const failing = jobs.map((j) => j.id).filter((id) => !current.passed.includes(id));
    console.log(
      `\n${name}: old ${old.passed.length}/${jobs.length}, new ${current.passed.length}/${jobs.length}; ` +
        `failing now: ${failing.join(", ") || "none"}`,
    );
  }
}
