/**
 * `trainer:compare`, the results: the table of the arms' runs — held-out success at the end of
 * each run, the mean over seeds with a 95% t-interval across seeds (runs differ in warm start,
 * tasks and sampling; the spread between seeds is the uncertainty that matters), and the pooled
 * k/n with its Wilson interval — the best arm against each other paired by seed, and the files:
 * runs/<compare id>/compare.{json,md} with the plots curves.svg and final.svg.
 */
import { mean } from "@troupe/core";
import type { ObjectStore } from "@troupe/storage";
import { z } from "zod";
import type { Recipe } from "../recipe.ts";
import { finalSuccessSvg, learningCurvesSvg } from "../reports/plots.ts";
import { interval, markdownTable, pct, signedPoints, table } from "../reports/reporter.ts";
import { meanRecord, seedInterval, seedSummary } from "../reports/statistics.ts";
import { ARM_DESCRIPTIONS, ARMS, type Arm } from "./compare-arms.ts";
import { RunResultFields } from "./run-results.ts";

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

export function summarise(results: readonly ArmResult[]): CompareRow[] {
  const arms = ARMS.filter((arm) => results.some((r) => r.arm === arm));
  return arms.map((arm) => {
    const runs = results.filter((r) => r.arm === arm).sort((a, b) => a.seed - b.seed);
    const { final, gain, startMean, pooled } = seedSummary(runs);
    return {
      arm,
      description: ARM_DESCRIPTIONS[arm],
      seeds: runs.length,
      meanSuccess: final.mean,
      ...(final.ci95 ? { ci95Seeds: final.ci95 } : {}),
      pooled,
      perSeed: runs.map((r) => r.successRate),
      meanStartSuccess: startMean,
      gainMean: gain.mean,
      ...(gain.ci95 ? { gainCi95Seeds: gain.ci95 } : {}),
      samplesPerRun: Math.round(mean(runs.map((r) => r.samples))),
      minutesPerRun: mean(runs.map((r) => r.seconds)) / 60,
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
