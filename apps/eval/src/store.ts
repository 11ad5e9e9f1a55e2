/**
 * Where eval reports live in the store, next to what they evaluate:
 *
 *   teams/<name>/evals/<00000003>/<suite>-<stamp>.json   (+ .md)   a team version's reports
 *   runs/<id>/evals/<00000030>/<suite>-<stamp>.json      (+ .md)   a run checkpoint's (step 30)
 *   nightly/<lane>/<stamp>/report.{json,md,html}, gate.json         the nightly job's (lane: embedded, gpu)
 *
 * `<stamp>` is a UTC timestamp (20260101-020000.123Z), so keys sort by time.
 */
import { listFolders, type ObjectStore, pad, runRoot } from "@troupe/storage";
import { teamPrefix } from "@troupe/teams";
import { type EvalEntry, type EvalReport, parseReportText } from "./schema.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A UTC time as a key part, to the millisecond: 20260101-020000.123Z (sorts by time). */
export function timestampId(date = new Date()): string {
  return date.toISOString().replace(/[-:]/g, "").replace("T", "-");
}

/** The folder of an entry's reports in the store. */
export function entryEvalsPrefix(entry: Pick<EvalEntry, "subject">): string {
  const s = entry.subject;
  return s.kind === "team"
    ? `${teamPrefix(s.name)}evals/${pad(s.version)}/`
    : `${runRoot(s.runId)}/evals/${s.warmStart ? "warm-start" : pad(s.step)}/`;
}

/**
 * Stores each entry as a one-entry report next to its subject (JSON and Markdown). Returns the
 * keys of the JSON files.
 */
export async function storeEntryReports(
  store: ObjectStore,
  report: EvalReport,
  markdown: (r: EvalReport) => string,
  stamp: string,
): Promise<string[]> {
  const keys: string[] = [];
  for (const entry of report.entries) {
    const single: EvalReport = { ...report, entries: [entry] };
    const base = `${entryEvalsPrefix(entry)}${report.suite.name}-${stamp}`;
    await store.put(`${base}.json`, encoder.encode(`${JSON.stringify(single, null, 2)}\n`));
    await store.put(`${base}.md`, encoder.encode(markdown(single)));
    keys.push(`${base}.json`);
  }
  return keys;
}

export async function readStoredReport(store: ObjectStore, key: string): Promise<EvalReport> {
  return parseReportText(decoder.decode(await store.get(key)), `${store.uri}/${key}`);
}

/** The newest stored report of a team version for a suite (undefined when it has none). */
export async function newestTeamReport(
  store: ObjectStore,
  name: string,
  version: number,
  suite: string | undefined,
): Promise<string | undefined> {
  const prefix = `${teamPrefix(name)}evals/${pad(version)}/`;
  const keys = (await store.list(prefix))
    .map((o) => o.key)
    .filter(
      (k) => k.endsWith(".json") && (suite === undefined || k.slice(prefix.length).startsWith(`${suite}-`)),
    )
    .sort();
  return keys.at(-1);
}

export const nightlyPrefix = (lane: string) => `nightly/${lane}/`;

export interface NightlyRecord {
  readonly stamp: string;
  readonly reportKey: string;
  readonly passed: boolean | undefined;
}

/** The lane's nightly runs, oldest first, with their gate verdicts (undefined: no gate was run). */
export async function nightlyRecords(store: ObjectStore, lane: string): Promise<NightlyRecord[]> {
  const out: NightlyRecord[] = [];
  for (const folder of await listFolders(store, nightlyPrefix(lane))) {
    const reportKey = `${folder}report.json`;
    if (!(await store.head(reportKey))) continue;
    let passed: boolean | undefined;
    const gate = await store.head(`${folder}gate.json`);
    if (gate) {
      const doc = JSON.parse(decoder.decode(await store.get(`${folder}gate.json`))) as { passed?: unknown };
      passed = typeof doc.passed === "boolean" ? doc.passed : undefined;
    }
    out.push({ stamp: folder.slice(nightlyPrefix(lane).length, -1), reportKey, passed });
  }
  return out;
}

export async function putText(store: ObjectStore, key: string, text: string): Promise<void> {
  await store.put(key, encoder.encode(text));
}
