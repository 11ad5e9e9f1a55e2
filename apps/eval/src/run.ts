/**
 * Evaluates a list of subjects on a suite into one report; each entry is also stored next to its
 * subject in the store (store.ts).
 */
import { createSandbox } from "@troupe/sandbox";
import type { ObjectStore } from "@troupe/storage";
import { createTeamRegistry, needsSandbox } from "@troupe/teams";
import { type EvalProgress, evaluateSubject } from "./evaluate.ts";
import { reportMarkdown } from "./render.ts";
import { EVAL_REPORT_SCHEMA_VERSION, type EvalEntry, type EvalReport, type Suite } from "./schema.ts";
import { storeEntryReports, timestampId } from "./store.ts";
import { type BackendOptions, type OpenSubject, openRun, openTeam, parseTeamRef } from "./subjects.ts";

export interface RunEvalOptions {
  readonly store: ObjectStore;
  readonly suite: Suite;
  /** `name[@ref]` of published teams. */
  readonly teams: readonly string[];
  /** `id[@step]` of runs. */
  readonly runs: readonly string[];
  readonly backend: Omit<BackendOptions, "runner">;
  /** Store each entry next to its subject (default true). */
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
  const registry = createTeamRegistry(options.store);
  const entries: EvalEntry[] = [];
  // A sandbox only when some subject runs the agents' code (created once, on first need).
  let runner: Awaited<ReturnType<typeof createSandbox>> | undefined;
  const sandbox = async () => (runner ??= await createSandbox());
  const evaluateOne = async (open: () => Promise<OpenSubject>) => {
    const subject = await open();
    try {
      log(`eval ${subject.label} (${subject.backend}) on suite ${options.suite.name}`);
      entries.push(
        await evaluateSubject(subject.loaded, options.suite, subject, progressLog(subject.label, log)),
      );
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
      : await storeEntryReports(options.store, report, (r) => reportMarkdown(r), stamp);
  return { report, stamp, storedKeys };
}

/** A run's recipe decides whether it needs the sandbox (its config names the environment). */
async function sandboxIfNeeded(
  store: ObjectStore,
  run: string,
  sandbox: () => Promise<Awaited<ReturnType<typeof createSandbox>>>,
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
