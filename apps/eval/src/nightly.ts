/**
 * `eval:nightly`: what the nightly GitHub Actions job runs, one lane at a time.
 *
 *   1. the store's published teams of the lane — `embedded` (every policy has its ONNX graph: the
 *      CPU runner) or `gpu` (the others: a runner labelled gpu, torch backend) — at `--ref`
 *      (default latest), each evaluated on the suite and stored next to the team;
 *   2. the lane's report stored under nightly/<lane>/<stamp>/ (report.json, .md, .html);
 *   3. the gate against the newest earlier nightly of the lane whose gate did not fail (a
 *      regression never becomes the next baseline), its verdict in gate.json;
 *   4. the same files in `--out` (the job's artifacts), and the Markdown appended to
 *      $GITHUB_STEP_SUMMARY when set. Exit 1 when the gate fails.
 */
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ObjectStore } from "@troupe/storage";
import { createTeamRegistry } from "@troupe/teams";
import { type GateResult, gateReports } from "./gate.ts";
import { reportHtml, reportMarkdown } from "./render.ts";
import { runEvaluation } from "./run.ts";
import type { EvalReport, Suite } from "./schema.ts";
import { nightlyPrefix, nightlyRecords, putText, readStoredReport } from "./store.ts";
import { type BackendOptions, isEmbedded } from "./subjects.ts";
import { EvalUsageError } from "./suite.ts";

export const LANES = ["embedded", "gpu"] as const;
export type Lane = (typeof LANES)[number];

export interface NightlyOptions {
  readonly store: ObjectStore;
  readonly lane: Lane;
  readonly suite: Suite;
  readonly ref: string;
  readonly out: string;
  readonly backend: Omit<BackendOptions, "runner">;
  readonly tolerance: number;
  /** Only these teams (default: every team of the lane). */
  readonly teams?: readonly string[];
  readonly log?: (line: string) => void;
  readonly now?: Date;
  readonly summaryFile?: string | undefined;
}

export interface NightlyResult {
  readonly report: EvalReport;
  readonly folder: string;
  readonly baseline?: string;
  readonly gate?: GateResult;
  readonly passed: boolean;
}

export async function runNightly(options: NightlyOptions): Promise<NightlyResult> {
  const log = options.log ?? (() => {});
  const registry = createTeamRegistry(options.store);
  const summaries = await registry.list({
    onUnreadable: (name, error) => log(`nightly: skipping team ${name}: ${error.message}`),
  });
  const wanted = options.teams ? new Set(options.teams) : undefined;
  for (const name of wanted ?? []) {
    if (!summaries.some((s) => s.name === name))
      throw new EvalUsageError(`--teams: no team "${name}" in ${options.store.uri}`);
  }
  const teams = summaries
    .filter((s) => wanted === undefined || wanted.has(s.name))
    .filter((s) => (options.lane === "embedded") === isEmbedded(s.latest))
    .map((s) => `${s.name}@${options.ref}`);
  log(`nightly ${options.lane}: ${teams.length} team(s)${teams.length ? `: ${teams.join(", ")}` : ""}`);
  const backend: Omit<BackendOptions, "runner"> =
    options.lane === "gpu" && options.backend.backend === "auto"
      ? { ...options.backend, backend: "torch" }
      : options.backend;
  // Earlier nightlies first: this run's own folder must not be its baseline.
  const earlier = await nightlyRecords(options.store, options.lane);
  const { report, stamp } = await runEvaluation({
    store: options.store,
    suite: options.suite,
    teams,
    runs: [],
    backend,
    log,
    ...(options.now ? { now: options.now } : {}),
  });
  const folder = `${nightlyPrefix(options.lane)}${stamp}/`;
  const baselineRecord = earlier.filter((r) => r.stamp < stamp && r.passed !== false).at(-1);
  let gate: { result: GateResult; baseline: string } | undefined;
  if (baselineRecord) {
    const baseline = await readStoredReport(options.store, baselineRecord.reportKey);
    gate = {
      result: gateReports(report, baseline, { tolerance: options.tolerance }),
      baseline: `nightly ${options.lane} ${baselineRecord.stamp}`,
    };
  }
  const passed = gate?.result.passed ?? true;
  const markdown =
    reportMarkdown(report, gate) +
    (gate ? "" : `**gate: no baseline** — the first nightly of lane ${options.lane} in this store\n`);
  const html = await reportHtml(report, gate);
  const gateDoc = `${JSON.stringify(
    {
      passed,
      baseline: baselineRecord ? baselineRecord.reportKey : null,
      failures: gate?.result.failures ?? [],
      rows: gate?.result.rows ?? [],
      notes: gate?.result.notes ?? [],
    },
    null,
    2,
  )}\n`;
  const files: Record<string, string> = {
    "report.json": `${JSON.stringify(report, null, 2)}\n`,
    "report.md": markdown,
    "report.html": html,
  };
  // The gate's verdict first: the report's presence is what makes the folder a nightly record.
  await putText(options.store, `${folder}gate.json`, gateDoc);
  for (const [name, text] of Object.entries(files)) await putText(options.store, `${folder}${name}`, text);
  mkdirSync(options.out, { recursive: true });
  for (const [name, text] of Object.entries({ ...files, "gate.json": gateDoc })) {
    writeFileSync(join(options.out, name), text);
  }
  if (options.summaryFile) appendFileSync(options.summaryFile, markdown);
  log(
    `nightly ${options.lane}: report ${options.store.uri}/${folder}report.json; gate ${
      gate ? (passed ? "passed" : "FAILED") : "skipped (no earlier nightly)"
    }`,
  );
  return {
    report,
    folder,
    ...(baselineRecord ? { baseline: baselineRecord.reportKey } : {}),
    ...(gate ? { gate: gate.result } : {}),
    passed,
  };
}
