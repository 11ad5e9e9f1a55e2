/**
 * `trainer:compare`: the same budget (steps, and as near as the tree shapes allow, samples) for
 *
 *   grpo             a single agent (the planner alone, re-planning from its own reports; one
 *                    policy) trained with GRPO on whole episodes — the single-agent baseline
 *   warm-start       the warm-started team without RL
 *   magrpo           MAGRPO (aligned joint actions, every joint action branches), a policy per role;
 *                    MAGRPO's agents act simultaneously, so the turn order is parallel
 *   atgrpo-shared    AT-GRPO with one policy for every role
 *   atgrpo-per-role  AT-GRPO with a policy per role
 *
 * over several seeds, each a full run (warm start + RL) in the recipe's store. The table gives the
 * held-out success at the end of each run: the mean over seeds with a 95% t-interval across seeds
 * (runs differ in warm start, tasks and sampling; the spread between seeds is the uncertainty that
 * matters), and the pooled k/n with its Wilson interval. It is written to
 * runs/<compare id>/compare.{json,md} and printed. A compare is resumable: finished arms are
 * read back, an interrupted run resumes from its newest committed step.
 *
 * Sample budget: per task and RL step, with N agents, T turns and K = AT-GRPO's candidates,
 *   AT-GRPO             N·T·K samples (K candidates per agent turn)
 *   GRPO (single)       K episodes × N·T planner turns = N·T·K   (the single agent gets N·T turns)
 *   MAGRPO aligned, G=K N·K·(1 + K + … + K^(T−1))                  (every joint action branches)
 * so MAGRPO gets proportionally fewer tasks per step. These are upper bounds (episodes end early
 * when solved); the table reports the samples each arm actually used.
 */
import { samplingParams, type Team } from "@troupe/core";
import type { Engine } from "@troupe/engine";
import { BASELINES, meanPassAtK } from "@troupe/envs";
import { runEpisodes } from "@troupe/rl";
import type { ObjectStore } from "@troupe/storage";
import { z } from "zod";
import { recipeEnvironment, type TrainerEnvironment } from "./envs.ts";
import { wilson } from "./evaluate.ts";
import { finalSuccessSvg, learningCurvesSvg } from "./plots.ts";
import { parseRecipe, type Recipe, RecipeError } from "./recipe.ts";
import { interval, markdownTable, pct, signedPoints, table } from "./reporter.ts";
import { RunResultFields, runCurve, runRecipe } from "./run-recipe.ts";
import { seedInterval } from "./stats.ts";
import { policySet, type TrainReporter } from "./train.ts";

export { seedInterval } from "./stats.ts";

export const ARMS = [
  "grpo",
  "warm-start",
  "magrpo",
  "atgrpo-shared",
  "atgrpo-per-role",
  "trained",
  ...BASELINES,
] as const;
export type Arm = (typeof ARMS)[number];

/** The arms of `trainer:compare` without --arms: the training strategies on the games. */
export const DEFAULT_ARMS: readonly Arm[] = [
  "grpo",
  "warm-start",
  "magrpo",
  "atgrpo-shared",
  "atgrpo-per-role",
];

export const ARM_DESCRIPTIONS: Readonly<Record<Arm, string>> = {
  grpo: "single agent, GRPO",
  "warm-start": "team, warm start only",
  magrpo: "team, MAGRPO (per-role)",
  "atgrpo-shared": "team, AT-GRPO (shared policy)",
  "atgrpo-per-role": "team, AT-GRPO (per-role)",
  trained: "team, the recipe as it is",
  single: "baseline: one agent does the whole task (no RL)",
  "naive-concat": "baseline: agents answer independently, answers combined (no RL)",
  sequential: "baseline: each agent sees the previous one's answer (no RL)",
  discussion: "baseline: one round of discussion, then revise (no RL)",
};

/** The recipe of one arm, derived from the base recipe (which must be an AT-GRPO team recipe). */
export function armRecipe(base: Recipe, arm: Arm, seed: number): Recipe {
  if (arm === "trained")
    return parseRecipe({ ...structuredClone(base), name: `${base.name}-${arm}`, seed }, `compare arm ${arm}`);
  if ((BASELINES as readonly string[]).includes(arm)) {
    // The paper's test-time baselines: the recipe's starting policies (its warm start, if any),
    // answering the baseline's way, evaluated without RL.
    const out = structuredClone(base) as Record<string, unknown>;
    return parseRecipe(
      {
        ...out,
        name: `${base.name}-${arm}`,
        seed,
        environment: { ...base.environment, baseline: arm },
        train: { ...base.train, steps: 0 },
      },
      `compare arm ${arm}`,
    );
  }
  // Every other arm is a variation of an AT-GRPO recipe's strategy and team.
  if (base.strategy.name !== "atgrpo") {
    throw new RecipeError(
      `compare arm ${arm}: the base recipe must use strategy atgrpo (got ${base.strategy.name}); arms for any recipe: trained, ${BASELINES.join(", ")}`,
    );
  }
  const { team } = recipeEnvironment(base);
  const agents = team.roles.length;
  const turns = team.maxTurns;
  const k = base.strategy.candidates;
  const out: Record<string, unknown> = { ...structuredClone(base), name: `${base.name}-${arm}`, seed };
  switch (arm) {
    case "grpo": {
      // The planner alone gets the team's N·T plans per episode; GRPO groups K whole episodes.
      out.environment = {
        name: base.environment.name,
        options: { ...base.environment.options, roles: "single", maxTurns: agents * turns },
      };
      out.team = { specialisation: "shared" };
      out.strategy = { name: "parallel", groupSize: k };
      // The single agent does the work of every role, so the team's slipping roles are its turns:
      // its demonstrations slip (and are cut) at the same rate (the team's role ids are not its roles).
      if (base.sft?.mistakeRoles || base.sft?.cut?.roles) {
        out.sft = {
          ...base.sft,
          mistakeRoles: undefined,
          ...(base.sft.cut ? { cut: { ...base.sft.cut, roles: undefined } } : {}),
        };
      }
      break;
    }
    case "warm-start":
      out.train = { ...base.train, steps: 0 };
      break;
    case "magrpo": {
      const perTask = agents * k * geometricSum(k, turns);
      const atgrpoPerTask = agents * turns * k;
      // MAGRPO samples joint actions on one state: the roles act simultaneously each turn (the
      // fixer plans from the turn's starting board, its plan executes after the planner's).
      out.team = { ...base.team, specialisation: "per-role", turnOrder: "parallel" };
      out.strategy = { name: "magrpo", groupSize: k, jointMode: "aligned" };
      out.train = {
        ...base.train,
        tasksPerStep: Math.max(1, Math.round((base.train.tasksPerStep * atgrpoPerTask) / perTask)),
      };
      break;
    }
    case "atgrpo-shared":
      out.team = { ...base.team, specialisation: "shared" };
      break;
    case "atgrpo-per-role":
      out.team = { ...base.team, specialisation: "per-role" };
      break;
  }
  return parseRecipe(out, `compare arm ${arm}`);
}

/** 1 + k + … + k^(t−1): the nodes of an aligned MAGRPO tree of depth t with branching k. */
function geometricSum(k: number, t: number): number {
  let total = 0;
  for (let i = 0; i < t; i++) total += k ** i;
  return total;
}

/**
 * What sampling the final policies `samples` times per held-out task measured (compare --samples):
 * unbiased pass@k per k ≤ samples, averaged over tasks; where the environment runs tests, the mean
 * fraction of tests passed; where it scores writing tiers, each tier's mean.
 */
export const SampledSchema = z.strictObject({
  samples: z.number().int(),
  tasks: z.number().int(),
  passAtK: z.record(z.string(), z.number()),
  testPassRate: z.number().optional(),
  tiers: z.record(z.string(), z.number()).optional(),
});
export type Sampled = z.infer<typeof SampledSchema>;

export const ArmResultSchema = z.strictObject({
  arm: z.enum(ARMS),
  ...RunResultFields,
  sampled: SampledSchema.optional(),
});
export type ArmResult = z.infer<typeof ArmResultSchema>;

export interface CompareOptions {
  readonly base: Recipe;
  readonly store: ObjectStore;
  readonly compareId: string;
  readonly arms: readonly Arm[];
  readonly seeds: readonly number[];
  readonly reporter: TrainReporter;
  /** Episodes per held-out task at temperature 1 after each run, for pass@k (0: none). */
  readonly samples?: number;
  /** Read back the finished arm × seed runs and run nothing (`compare --finished`). */
  readonly finishedOnly?: boolean;
}

/** The k of pass@k compare reports (those not above the samples per task). */
export const PASS_KS = [1, 3, 5, 10] as const;

/**
 * Samples the loaded final policies `samples` times on each of the recipe's held-out tasks
 * (temperature 1, the recipe's other sampling settings) and measures what `Sampled` holds.
 */
export async function sampleFinal(
  recipe: Recipe,
  run: { engine: Engine; trainerEnv: TrainerEnvironment; team: Team },
  samples: number,
): Promise<Sampled> {
  const { trainerEnv, team } = run;
  const tasks = trainerEnv.generateTasks("test", recipe.train.evalTasks, 0);
  const episodes = await runEpisodes(
    {
      runId: "compare-samples",
      step: recipe.train.steps,
      seed: recipe.seed,
      env: trainerEnv.env,
      team,
      policies: policySet(run.engine, team, recipe.train.steps),
      sampling: samplingParams({ ...recipe.sampling, temperature: 1 }),
    },
    tasks,
    samples,
  );
  const perTask = tasks.map((task) => episodes.filter((e) => e.task === task));
  const passAtK: Record<string, number> = {};
  for (const k of PASS_KS.filter((k) => k <= samples)) {
    passAtK[String(k)] = meanPassAtK(
      perTask.map((eps) => ({ n: eps.length, correct: eps.filter((e) => e.success).length })),
      k,
    );
  }
  const answers = episodes.map((e) =>
    trainerEnv.render(
      e.state,
      e.steps.flatMap((s) =>
        s.acted.map((a) => ({ agent: a.agent, text: a.completion.text, info: s.result.info?.[a.agent] })),
      ),
    ),
  );
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  const code = answers.flatMap((a) => (a.kind === "code" ? [a] : []));
  const writing = answers.flatMap((a) => (a.kind === "writing" ? [a] : []));
  return {
    samples,
    tasks: tasks.length,
    passAtK,
    ...(code.length === answers.length && answers.length > 0
      ? {
          testPassRate: mean(
            code.map((a) => (a.tests && a.tests.total > 0 ? a.tests.passed / a.tests.total : 0)),
          ),
        }
      : {}),
    ...(writing.length === answers.length && answers.length > 0
      ? {
          tiers: Object.fromEntries(
            (["structure", "coordination", "vocabulary", "style", "total"] as const).map((tier) => [
              tier,
              mean(writing.map((a) => a.tiers?.[tier] ?? 0)),
            ]),
          ),
        }
      : {}),
  };
}

const armKey = (compareId: string, arm: Arm, seed: number) => `runs/${compareId}/arms/${arm}-s${seed}.json`;

/**
 * Runs (or reads back) every arm × seed, in that order, one at a time (they share the cores).
 * Each is `runRecipe`: resumable, and its result read back from the run's metrics.
 */
export async function compare(options: CompareOptions): Promise<ArmResult[]> {
  const results: ArmResult[] = [];
  for (const arm of options.arms) {
    for (const seed of options.seeds) {
      const key = armKey(options.compareId, arm, seed);
      const done = await options.store.head(key);
      if (done) {
        const parsed = ArmResultSchema.parse(
          JSON.parse(new TextDecoder().decode(await options.store.get(key))),
        );
        options.reporter.note(`compare: ${arm} seed ${seed} already done (${parsed.runId})`);
        // Results stored before curves were kept: the curve is in the run's metrics.
        results.push(
          parsed.curve ? parsed : { ...parsed, curve: await runCurve(options.store, parsed.runId) },
        );
        continue;
      }
      if (options.finishedOnly) {
        options.reporter.note(`compare: ${arm} seed ${seed} has not finished (left out)`);
        continue;
      }
      options.reporter.note(`compare: ${arm} seed ${seed}`);
      const recipe = armRecipe(options.base, arm, seed);
      const samples = options.samples ?? 0;
      let sampled: Sampled | undefined;
      const run = await runRecipe({
        recipe,
        runId: `${options.compareId}-${arm}-s${seed}`,
        store: options.store,
        reporter: options.reporter,
        ...(samples > 0
          ? {
              afterRun: async (loaded) => {
                options.reporter.note(`compare: ${arm} seed ${seed}: ${samples} samples per held-out task`);
                sampled = await sampleFinal(recipe, loaded, samples);
              },
            }
          : {}),
      });
      if (!run) throw new Error(`compare: ${arm} seed ${seed} stopped before its last step`);
      const result: ArmResult = { arm, ...run, ...(sampled ? { sampled } : {}) };
      await options.store.put(key, new TextEncoder().encode(`${JSON.stringify(result, null, 2)}\n`));
      results.push(result);
    }
  }
  return results;
}

export interface CompareRow {
  readonly arm: Arm;
  readonly description: string;
  readonly seeds: number;
  readonly meanSuccess: number;
  readonly ci95Seeds?: [number, number];
  readonly pooled: { successes: number; tasks: number; ci95: [number, number] };
  readonly perSeed: number[];
  readonly meanStartSuccess: number;
  /**
   * final − start per seed, with its t-interval over seeds: the gain of RL paired by seed, free of
   * the spread between the seeds' starts (0 for an arm without RL).
   */
  readonly gainMean: number;
  readonly gainCi95Seeds?: [number, number];
  readonly samplesPerRun: number;
  readonly minutesPerRun: number;
  /** Means over seeds of the sampled measures (compare --samples). */
  readonly passAtK?: Record<string, number>;
  readonly testPassRate?: number;
  readonly tiers?: Record<string, number>;
}

/** Mean over runs of each key of a per-run record (runs without it are skipped). */
function meanRecord(
  records: readonly (Record<string, number> | undefined)[],
): Record<string, number> | undefined {
  const present = records.filter((r): r is Record<string, number> => r !== undefined);
  if (present.length === 0) return undefined;
  const keys = Object.keys(present[0]!);
  return Object.fromEntries(
    keys.map((k) => [k, present.reduce((s, r) => s + (r[k] ?? 0), 0) / present.length]),
  );
}

export function summarise(results: readonly ArmResult[]): CompareRow[] {
  const arms = ARMS.filter((arm) => results.some((r) => r.arm === arm));
  return arms.map((arm) => {
    const runs = results.filter((r) => r.arm === arm).sort((a, b) => a.seed - b.seed);
    const { mean, ci95 } = seedInterval(runs.map((r) => r.successRate));
    const gain = seedInterval(
      runs.map((r) => r.successRate - r.startSuccessRate),
      [-1, 1],
    );
    const successes = runs.reduce((n, r) => n + r.successes, 0);
    const tasks = runs.reduce((n, r) => n + r.tasks, 0);
    return {
      arm,
      description: ARM_DESCRIPTIONS[arm],
      seeds: runs.length,
      meanSuccess: mean,
      ...(ci95 ? { ci95Seeds: ci95 } : {}),
      pooled: { successes, tasks, ci95: wilson(successes, tasks) },
      perSeed: runs.map((r) => r.successRate),
      meanStartSuccess: runs.reduce((s, r) => s + r.startSuccessRate, 0) / runs.length,
      gainMean: gain.mean,
      ...(gain.ci95 ? { gainCi95Seeds: gain.ci95 } : {}),
      samplesPerRun: Math.round(runs.reduce((s, r) => s + r.samples, 0) / runs.length),
      minutesPerRun: runs.reduce((s, r) => s + r.seconds, 0) / runs.length / 60,
      ...optionalMeans(runs),
    };
  });
}

function optionalMeans(runs: readonly ArmResult[]) {
  const passAtK = meanRecord(runs.map((r) => r.sampled?.passAtK));
  const testPassRate = meanRecord(
    runs.map((r) => (r.sampled?.testPassRate !== undefined ? { v: r.sampled.testPassRate } : undefined)),
  )?.v;
  const tiers = meanRecord(runs.map((r) => r.sampled?.tiers));
  return {
    ...(passAtK ? { passAtK } : {}),
    ...(testPassRate !== undefined ? { testPassRate } : {}),
    ...(tiers ? { tiers } : {}),
  };
}

/**
 * The best arm (highest mean success) against each other arm, paired by seed: on the seeds both
 * finished, best − other per seed, with its t-interval over those seeds. Pairing takes out what
 * a seed does to every arm alike (its held-out draws, its warm start), so an interval that excludes
 * 0 says the best arm wins on seeds like these; the arms' own intervals can overlap meanwhile.
 */
export interface PairedDifference {
  readonly arm: Arm;
  readonly versus: Arm;
  readonly seeds: readonly number[];
  readonly perSeed: readonly number[];
  readonly mean: number;
  readonly ci95?: [number, number];
}

export function pairedDifferences(results: readonly ArmResult[]): PairedDifference[] {
  const rows = summarise(results);
  if (rows.length < 2) return [];
  const best = rows.reduce((a, b) => (b.meanSuccess > a.meanSuccess ? b : a));
  const bySeed = (arm: Arm) =>
    new Map(results.filter((r) => r.arm === arm).map((r) => [r.seed, r.successRate]));
  const mine = bySeed(best.arm);
  return rows
    .filter((row) => row.arm !== best.arm)
    .flatMap((row) => {
      const theirs = bySeed(row.arm);
      const seeds = [...mine.keys()].filter((seed) => theirs.has(seed)).sort((a, b) => a - b);
      if (seeds.length === 0) return [];
      const perSeed = seeds.map((seed) => mine.get(seed)! - theirs.get(seed)!);
      const { mean, ci95 } = seedInterval(perSeed, [-1, 1]);
      return [{ arm: best.arm, versus: row.arm, seeds, perSeed, mean, ...(ci95 ? { ci95 } : {}) }];
    });
}

/** The paired differences as table rows (points). */
export function pairedRows(differences: readonly PairedDifference[]): Record<string, string | number>[] {
  return differences.map((d) => ({
    arm: d.arm,
    "minus arm": d.versus,
    "paired seeds": d.seeds.join(","),
    "difference (points)": signedPoints(d.mean),
    "95% CI (seeds)": interval(d.ci95, signedPoints),
    "per seed (points)": d.perSeed.map(signedPoints).join(" "),
  }));
}

/** The comparison as table rows: `table` prints them, `markdownTable` writes them for docs/experiments. */
export function compareRows(rows: readonly CompareRow[]): Record<string, string | number>[] {
  return rows.map((row) => ({
    arm: row.arm,
    what: row.description,
    seeds: row.seeds,
    "held-out success %": pct(row.meanSuccess),
    "95% CI (seeds)": interval(row.ci95Seeds),
    "pooled k/n": `${row.pooled.successes}/${row.pooled.tasks}`,
    "95% CI (pooled)": interval(row.pooled.ci95),
    "per seed %": row.perSeed.map(pct).join(" "),
    "start %": pct(row.meanStartSuccess),
    "gain over start (points)": signedPoints(row.gainMean),
    "gain 95% CI (seeds)": interval(row.gainCi95Seeds, signedPoints),
    "samples/run": row.samplesPerRun,
    "min/run": row.minutesPerRun.toFixed(1),
    ...Object.fromEntries(Object.entries(row.passAtK ?? {}).map(([k, v]) => [`pass@${k} %`, pct(v)])),
    ...(row.testPassRate !== undefined ? { "tests passed %": pct(row.testPassRate) } : {}),
    ...Object.fromEntries(Object.entries(row.tiers ?? {}).map(([k, v]) => [k, v.toFixed(3)])),
  }));
}

/** Writes compare.json, compare.md and the plots curves.svg and final.svg next to the arms' results. */
export async function writeComparison(
  store: ObjectStore,
  compareId: string,
  base: Recipe,
  results: readonly ArmResult[],
): Promise<{ json: string; markdown: string; curves: string; final: string; text: string }> {
  const rows = summarise(results);
  const paired = pairedDifferences(results);
  const pairedText = paired.length
    ? `\n\npaired by seed (the best arm minus each other):\n${table(pairedRows(paired))}`
    : "";
  const text = `${table(compareRows(rows))}${pairedText}`;
  const folder = `runs/${compareId}`;
  const keys = {
    json: `${folder}/compare.json`,
    markdown: `${folder}/compare.md`,
    curves: `${folder}/curves.svg`,
    final: `${folder}/final.svg`,
  };
  const groups = rows.map((row) => ({ name: row.arm, results: results.filter((r) => r.arm === row.arm) }));
  const what = `compare ${compareId}`;
  const encoder = new TextEncoder();
  await store.put(keys.json, encoder.encode(`${JSON.stringify({ base, rows, paired, results }, null, 2)}\n`));
  const pairedMarkdown = paired.length
    ? `\n**Paired by seed** (the best arm minus each other, on the seeds both finished):\n\n${markdownTable(pairedRows(paired))}\n`
    : "";
  await store.put(keys.markdown, encoder.encode(`${markdownTable(compareRows(rows))}\n${pairedMarkdown}`));
  await store.put(keys.curves, encoder.encode(await learningCurvesSvg(groups, what)));
  await store.put(keys.final, encoder.encode(await finalSuccessSvg(groups, what)));
  return { ...keys, text };
}
