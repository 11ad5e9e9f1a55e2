/**
 * One subject (a loaded team) on a suite: every episode is a `solve()` — the serving path, which
 * is the trainer's evaluation loop (same prompts, same seed derivation) — on the held-out tasks the
 * trainer evaluates on (the first `suite.tasks` of the environment's test stream, seed 0).
 *
 * Per task:
 *   - one episode with the subject's own sampling (a published team's manifest sampling: the
 *     run's evaluation temperature, greedy for trained teams) → `success` (Wilson interval over
 *     tasks) and `meanTeamReturn` (t-interval over tasks), the numbers `trainer:eval` and the
 *     manifest report;
 *   - `suite.samples` episodes at the suite's temperature → unbiased pass@k per task (Chen et al.
 *     2021), averaged over tasks with a t-interval over tasks; the test pass rate where the
 *     environment runs tests (coding); each reward tier's mean for writing.
 * Per role: calls, prompt and completion tokens, generation time per call; per episode: latency.
 */
import { deriveSeed, type Task } from "@troupe/core";
import { passAtK } from "@troupe/envs";
import { type LoadedTeam, type SolveAnswer, type SolveResult, solve } from "@troupe/teams";
import { seedInterval, wilson } from "@troupe/trainer";
import type { Estimate, EvalEntry, Example, RoleUsageSummary, Subject, Suite } from "./schema.ts";
import { suiteKs } from "./suite.ts";

/** Success (Wilson interval) of the tasks of each difficulty, easiest first. */
export function successByDifficulty(
  difficulties: readonly number[],
  results: readonly Pick<SolveResult, "solved">[],
): { difficulty: number; success: Estimate }[] {
  const counts = new Map<number, { k: number; n: number }>();
  difficulties.forEach((d, i) => {
    const c = counts.get(d) ?? { k: 0, n: 0 };
    c.n += 1;
    if (results[i]?.solved === true) c.k += 1;
    counts.set(d, c);
  });
  return [...counts]
    .sort(([a], [b]) => a - b)
    .map(([difficulty, { k, n }]) => {
      const [low, high] = wilson(k, n);
      return { difficulty, success: { value: k / n, low, high, n, method: "wilson" as const } };
    });
}

export interface SubjectInfo {
  readonly subject: Subject;
  readonly label: string;
  readonly key: string;
  readonly backend: EvalEntry["backend"];
}

/** Called after each episode (for a progress line). */
export type EvalProgress = (done: number, total: number) => void;

/** Longest prompt kept per turn in the report's example episodes (characters). */
const MAX_PROMPT_CHARS = 4000;

export async function evaluateSubject(
  loaded: LoadedTeam,
  suite: Suite,
  info: SubjectInfo,
  progress?: EvalProgress,
): Promise<EvalEntry> {
  const started = performance.now();
  const tasks = loaded.environment.generateTasks("test", suite.tasks, 0);
  const ks = suiteKs(suite);
  const total = tasks.length * (1 + suite.samples);
  let done = 0;
  const tick = () => progress?.(++done, total);

  const own: SolveResult[] = [];
  const perTaskPass: Map<number, number[]> = new Map(ks.map((k) => [k, []]));
  const perTaskTests: number[] = [];
  const perTaskTiers: Record<string, number>[] = [];
  const all: SolveResult[] = [];
  for (const task of tasks) {
    const input = { task: { id: task.id, split: "test", payload: task.payload } };
    const first = await solve(loaded, input, { sampling: { seed: episodeSeed(suite.seed, "own", task.id) } });
    own.push(first);
    all.push(first);
    tick();
    const sampled: SolveResult[] = [];
    for (let j = 0; j < suite.samples; j++) {
      const result = await solve(loaded, input, {
        sampling: {
          temperature: suite.temperature,
          topP: suite.topP,
          seed: episodeSeed(suite.seed, "sample", task.id, j),
        },
      });
      sampled.push(result);
      all.push(result);
      tick();
    }
    const correct = sampled.filter((r) => r.solved === true).length;
    for (const k of ks) perTaskPass.get(k)!.push(passAtK(sampled.length, correct, k));
    const fractions = sampled.map((r) => testFraction(r.answer));
    if (fractions.some((f) => f !== undefined)) {
      perTaskTests.push(fractions.reduce<number>((s, f) => s + (f ?? 0), 0) / fractions.length);
    }
    const tiers = sampled.flatMap((r) =>
      r.answer.kind === "writing" && r.answer.tiers ? [r.answer.tiers] : [],
    );
    if (tiers.length > 0) {
      perTaskTiers.push(
        Object.fromEntries(WRITING_TIERS.map((t) => [t, tiers.reduce((s, x) => s + x[t], 0) / tiers.length])),
      );
    }
  }

  const successes = own.filter((r) => r.solved === true).length;
  const [low, high] = wilson(successes, own.length);
  const { env } = loaded.environment;
  const passAt: Record<string, Estimate> = {};
  for (const k of ks) passAt[String(k)] = tInterval(perTaskPass.get(k)!, [0, 1]);
  return {
    subject: info.subject,
    label: info.label,
    key: info.key,
    environment: {
      name: loaded.environment.env.name,
      options: plainOptions(loaded.manifest.environment?.options ?? {}),
    },
    backend: info.backend,
    tasks: tasks.length,
    samples: suite.samples,
    metrics: {
      success: { value: own.length ? successes / own.length : 0, low, high, n: own.length, method: "wilson" },
      meanTeamReturn: tInterval(
        own.map((r) => r.teamReturn),
        [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY],
      ),
      passAtK: passAt,
      ...(perTaskTests.length === tasks.length && tasks.length > 0
        ? { testPassRate: tInterval(perTaskTests, [0, 1]) }
        : {}),
      ...(perTaskTiers.length === tasks.length && tasks.length > 0
        ? {
            tiers: Object.fromEntries(
              WRITING_TIERS.map((t) => [
                t,
                tInterval(
                  perTaskTiers.map((x) => x[t]!),
                  [0, Number.POSITIVE_INFINITY],
                ),
              ]),
            ),
          }
        : {}),
      ...(env.difficulty && tasks.length > 0
        ? {
            byDifficulty: successByDifficulty(
              tasks.map((t) => env.difficulty!(t)),
              own,
            ),
          }
        : {}),
    },
    usage: usageOf(all),
    latency: latencyOf(all),
    examples: examplesOf(tasks, own),
    seconds: (performance.now() - started) / 1000,
  };
}

/** A solve's sampling seed (solve takes seeds below 2³¹). */
function episodeSeed(base: number, ...path: (string | number)[]): number {
  return deriveSeed(base, ...path) % 2 ** 31;
}

/** Mean and 95% t-interval over tasks (one task: the interval is the point). */
export function tInterval(values: readonly number[], bounds: readonly [number, number]): Estimate {
  const { mean, ci95 } = seedInterval(values, bounds);
  return { value: mean, low: ci95?.[0] ?? mean, high: ci95?.[1] ?? mean, n: values.length, method: "t" };
}

/** The reward tiers a writing answer reports, in order. */
const WRITING_TIERS = ["structure", "coordination", "vocabulary", "style", "total"] as const;

/**
 * The fraction of the task's hidden tests the final program passed, where the answer is a coding
 * team's (no program written: 0). Undefined for answers of other kinds.
 */
export function testFraction(answer: SolveAnswer): number | undefined {
  if (answer.kind !== "code") return undefined;
  return answer.tests && answer.tests.total > 0 ? answer.tests.passed / answer.tests.total : 0;
}

function usageOf(results: readonly SolveResult[]): Record<string, RoleUsageSummary> {
  const out: Record<string, RoleUsageSummary> = {};
  const ms: Record<string, number> = {};
  for (const r of results) {
    for (const turn of r.turns) ms[turn.role] = (ms[turn.role] ?? 0) + turn.ms;
    for (const [role, u] of Object.entries(r.usage)) {
      const o = (out[role] ??= {
        calls: 0,
        promptTokens: 0,
        completionTokens: 0,
        promptTokensPerEpisode: 0,
        completionTokensPerEpisode: 0,
        msPerCall: 0,
      });
      o.calls += u.calls;
      o.promptTokens += u.promptTokens;
      o.completionTokens += u.completionTokens;
    }
  }
  for (const [role, o] of Object.entries(out)) {
    o.promptTokensPerEpisode = results.length ? o.promptTokens / results.length : 0;
    o.completionTokensPerEpisode = results.length ? o.completionTokens / results.length : 0;
    o.msPerCall = o.calls ? (ms[role] ?? 0) / o.calls : 0;
  }
  return out;
}

function latencyOf(results: readonly SolveResult[]) {
  const ms = results.map((r) => r.latencyMs).sort((a, b) => a - b);
  const q = (p: number) => (ms.length ? ms[Math.min(ms.length - 1, Math.floor(p * ms.length))]! : 0);
  return {
    episodes: ms.length,
    meanMs: ms.length ? ms.reduce((a, b) => a + b, 0) / ms.length : 0,
    p50Ms: q(0.5),
    p95Ms: q(0.95),
  };
}

/** The best, median and worst of the subject's own episodes by team return (ties: task order). */
function examplesOf(tasks: readonly Task<unknown>[], own: readonly SolveResult[]): Example[] {
  if (own.length === 0) return [];
  const order = own.map((r, i) => ({ r, i })).sort((a, b) => b.r.teamReturn - a.r.teamReturn || a.i - b.i);
  const picks: [Example["label"], number][] = [
    ["best", 0],
    ["median", Math.floor((order.length - 1) / 2)],
    ["worst", order.length - 1],
  ];
  return picks.map(([label, at]) => {
    const { r, i } = order[at]!;
    return {
      label,
      taskId: tasks[i]!.id,
      solved: r.solved,
      teamReturn: r.teamReturn,
      turns: r.turns.map((t) => ({
        turn: t.turn,
        agent: t.agent,
        role: t.role,
        prompt: t.prompt.length > MAX_PROMPT_CHARS ? `${t.prompt.slice(0, MAX_PROMPT_CHARS)}…` : t.prompt,
        completion: t.completion,
        teamReward: t.teamReward,
      })),
    };
  });
}

/** Environment options as plain JSON (a sandbox runner or other objects are left out). */
function plainOptions(options: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(options, (_k, v) =>
      typeof v === "object" &&
      v !== null &&
      !Array.isArray(v) &&
      Object.getPrototypeOf(v) !== Object.prototype
        ? undefined
        : v,
    ),
  );
}
