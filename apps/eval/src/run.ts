/**
 * Evaluates a list of subjects on a suite into one report; each entry is also stored next to its
 * subject in the store (store.ts).
 */

import { BASELINES, type Baseline, withBaseline } from "@troupe/envs";
import { manifestEnvironmentLoader } from "@troupe/envs/module";
import { createSandboxService } from "@troupe/sandbox";
import type { ObjectStore } from "@troupe/storage";
import { createTeamRegistry, type LoadedTeam, needsSandbox } from "@troupe/teams";
import { type EvalProgress, evaluateSubject } from "./evaluate.ts";
import { reportMarkdown } from "./render.ts";
import { EVAL_REPORT_SCHEMA_VERSION, type EvalEntry, type EvalReport, type Suite } from "./schema.ts";
import { storeEntryReports, timestampId } from "./store.ts";
import { type BackendOptions, type OpenSubject, openRun, openTeam, parseTeamRef } from "./subjects.ts";
import { EvalUsageError } from "./suite.ts";

export interface RunEvalOptions {
  readonly store: ObjectStore;
  readonly suite: Suite;
  /** `name[@ref]` of published teams. */
  readonly teams: readonly string[];
  /** `id[@step]` of runs. */
  readonly runs: readonly string[];
  readonly backend: Omit<BackendOptions, "runner">;
  /** The workspace root: a team's own environment files are read from here (default: the working folder). */
  readonly root?: string;
  /**
   * How each subject answers: `team` (as trained) and/or the papers' test-time baselines (single,
   * naive-concat, sequential, discussion) with the subject's policies. Default: team.
   */
  readonly arms?: readonly EvalArm[];
  /** Store each entry next to its subject (default true; baseline entries stay in the report only). */
  readonly storeEntries?: boolean;
  readonly log?: (line: string) => void;
  readonly now?: Date;
}

export interface RunEvalResult {
  readonly report: EvalReport;
  readonly stamp: string;
  /** Keys of the entries' reports in the store. */
  readonly storedKeys: readonly string[];
}

function progressLog(label: string, log: (line: string) => void): EvalProgress {
  let lastTenth = -1;
  return (done, total) => {
    const tenth = Math.floor((10 * done) / total);
    if (tenth !== lastTenth) {
      lastTenth = tenth;
      log(`eval ${label}: ${done}/${total} episodes`);
    }
  };
}

export async function runEvaluation(options: RunEvalOptions): Promise<RunEvalResult> {
  const log = options.log ?? (() => {});
  const now = options.now ?? new Date();
  // A team trained on an environment of its own loads the same files (one line when one changed).
  const registry = createTeamRegistry(options.store, {
    prepareEnvironment: manifestEnvironmentLoader(
      options.root ?? process.cwd(),
      (m) => new EvalUsageError(m),
    ),
  });
  const entries: EvalEntry[] = [];
  // A sandbox only when some subject runs the agents' code (created once, on first need).
  let runner: Awaited<ReturnType<typeof createSandboxService>> | undefined;
  // In a service process: a runs' fork from this process, which holds the teams' models, is slow.
  const sandbox = async () => (runner ??= await createSandboxService());
  const arms = options.arms ?? ["team"];
  const evaluateOne = async (open: () => Promise<OpenSubject>) => {
    const subject = await open();
    try {
      for (const arm of arms) {
        const label = arm === "team" ? subject.label : `${subject.label} · ${arm}`;
        log(`eval ${label} (${subject.backend}) on suite ${options.suite.name}`);
        const loaded = arm === "team" ? subject.loaded : baselineTeam(subject.loaded, arm);
        const entry = await evaluateSubject(
          loaded,
          options.suite,
          { ...subject, label },
          progressLog(label, log),
        );
        entries.push(arm === "team" ? entry : { ...entry, arm });
      }
    } finally {
      await subject.close();
    }
  };
  for (const team of options.teams) {
    await evaluateOne(async () => {
      const [name, ref] = parseTeamRef(team);
      const manifest = await registry.resolve(name, ref);
      const backendOptions = {
        ...options.backend,
        runner: needsSandbox(manifest.environment) ? await sandbox() : undefined,
      };
      return openTeam(registry, team, backendOptions);
    });
  }
  for (const run of options.runs) {
    await evaluateOne(async () =>
      openRun(options.store, run, await sandboxIfNeeded(options.store, run, sandbox)),
    );
  }
  const report: EvalReport = {
    schemaVersion: EVAL_REPORT_SCHEMA_VERSION,
    kind: "troupe-eval-report",
    createdAt: now.toISOString(),
    suite: options.suite,
    store: options.store.uri,
    entries,
  };
  const stamp = timestampId(now);
  const storedKeys =
    options.storeEntries === false
      ? []
      : await storeEntryReports(
          options.store,
          { ...report, entries: entries.filter((e) => e.arm === undefined) },
          (r) => reportMarkdown(r),
          stamp,
        );
  return { report, stamp, storedKeys };
}

export const EVAL_ARMS = ["team", ...BASELINES] as const;
export type EvalArm = (typeof EVAL_ARMS)[number];

/** The subject answering a baseline's way: its environment wrapped, its team reshaped (baselines.ts). */
function baselineTeam(loaded: LoadedTeam, baseline: Baseline): LoadedTeam {
  const { registered, team } = withBaseline(loaded.environment, loaded.team, baseline);
  return { ...loaded, environment: registered, team };
}

/** A run's recipe decides whether it needs the sandbox (its config names the environment). */
async function sandboxIfNeeded(
  store: ObjectStore,
  run: string,
  sandbox: () => Promise<Awaited<ReturnType<typeof createSandboxService>>>,
) {
  const runId = run.includes("@") ? run.slice(0, run.lastIndexOf("@")) : run;
  const key = `runs/${runId}/config.json`;
  if (!(await store.head(key))) return undefined;
  const config = JSON.parse(new TextDecoder().decode(await store.get(key))) as {
    environment?: { name?: string; options?: Record<string, unknown> };
  };
  const environment = { name: config.environment?.name ?? "", options: config.environment?.options ?? {} };
  return needsSandbox(environment) ? sandbox() : undefined;
}
