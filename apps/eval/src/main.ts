/**
 * The eval command line (`nx run eval:<target> -- [flags]`):
 *
 *   run      evaluate published teams and run checkpoints on a suite → JSON + Markdown + HTML
 *   gate     a current report against a baseline: exit 1 with a table of what dropped
 *   nightly  the nightly job: a lane's teams, the report in the store, the gate against the last nightly
 *
 * Relative `file://` stores are relative to the workspace root (as the trainer's); so are relative
 * paths of files (--out, --current, --baseline, --suite) under nx.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DEFAULT_STORE_URI, type ObjectStore, openStore } from "@troupe/storage/node";
import { createTeamRegistry } from "@troupe/teams";
import { table } from "@troupe/trainer";
import { gateReports, gateRows } from "./gate.ts";
import { LANES, type Lane, runNightly } from "./nightly.ts";
import { gateMarkdown, reportHtml, reportMarkdown, summaryRows } from "./render.ts";
import { EVAL_ARMS, type EvalArm, runEvaluation } from "./run.ts";
import { type EvalReport, parseReportText, ReportError, type Suite } from "./schema.ts";
import { newestTeamReport, readStoredReport } from "./store.ts";
import { type BackendChoice, parseTeamRef } from "./subjects.ts";
import { EvalUsageError, loadSuite, parseSuite } from "./suite.ts";

const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const workspaceRoot = resolve(appRoot, "../..");
// Under nx the command runs in apps/eval, and nothing says where it was typed: relative paths are
// the workspace root's then (as relative stores are); run directly, the working directory's.
const invokedFrom = process.env.NX_WORKSPACE_ROOT ?? process.env.INIT_CWD ?? process.cwd();

const USAGE = `usage: eval run   (--team <name[@alias|@version]>[,…] | --run <id[@step|@warm-start]>[,…])... [--suite nightly|full|<file>]
                [--store <uri>] [--backend auto|onnx|torch|openai] [--base-url <url>] [--device <d>]
                [--tasks <n>] [--samples <n>] [--arms team,single,…] [--out <report.json>] [--no-store]
       eval gate    --current <report.json> --baseline <report.json | name@alias | store key> [--store <uri>] [--tolerance <x>] [--out <gate.md>]
       eval nightly --lane embedded|gpu [--suite nightly] [--store <uri>] [--ref latest] [--teams a,b] [--out <dir>] [--tolerance <x>]
  --store     where teams and runs are (default $TROUPE_STORE or ${DEFAULT_STORE_URI}); s3://bucket/prefix
              uses AWS_ENDPOINT_URL_S3 / AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION
  --suite     how much evaluation: nightly (32 tasks × 10 samples), full (500 × 10) or a YAML file
  --backend   auto (default): onnx when every policy has model.onnx, else torch; openai needs --base-url
  --arms      team (default) and/or the papers' test-time baselines with the subject's policies:
              single, naive-concat, sequential, discussion (one report entry each)
  --tolerance extra drop the gate lets pass on every metric, in the metric's units (default 0)`;

const BACKENDS: readonly BackendChoice[] = ["auto", "onnx", "torch", "openai"];

function openStoreArg(uri: string | undefined): ObjectStore {
  try {
    return openStore(uri ?? process.env.TROUPE_STORE ?? DEFAULT_STORE_URI, { cwd: workspaceRoot });
  } catch (error) {
    throw new EvalUsageError((error as Error).message);
  }
}

const list = (values: readonly string[]) =>
  values
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");

function intArg(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new EvalUsageError(`--${name}: expected a positive integer, got "${value}"`);
  return n;
}

function numberArg(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0)
    throw new EvalUsageError(`--${name}: expected a number ≥ 0, got "${value}"`);
  return n;
}

/** The suite named by --suite, with --tasks/--samples (when given) in place of its own counts. */
function suiteArg(values: { suite: string; tasks?: string; samples?: string }): Suite {
  const suite = loadSuite(values.suite, invokedFrom);
  const tasks = intArg("tasks", values.tasks);
  const samples = intArg("samples", values.samples);
  if (tasks === undefined && samples === undefined) return suite;
  return parseSuite(
    { ...suite, ...(tasks ? { tasks } : {}), ...(samples ? { samples } : {}) },
    "--tasks/--samples",
  );
}

function backendArg(value: string): BackendChoice {
  if (!(BACKENDS as readonly string[]).includes(value)) {
    throw new EvalUsageError(`--backend: expected ${BACKENDS.join(", ")}, got "${value}"`);
  }
  return value as BackendChoice;
}

const outPath = (path: string) => resolve(invokedFrom, path);
const log = (line: string) => process.stderr.write(`${line}\n`);

function writeOut(path: string, text: string) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

async function commandRun(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      team: { type: "string", multiple: true, default: [] },
      run: { type: "string", multiple: true, default: [] },
      suite: { type: "string", default: "nightly" },
      store: { type: "string" },
      backend: { type: "string", default: "auto" },
      "base-url": { type: "string" },
      "api-key": { type: "string" },
      device: { type: "string" },
      tasks: { type: "string" },
      samples: { type: "string" },
      arms: { type: "string", default: "team" },
      out: { type: "string" },
      "no-store": { type: "boolean", default: false },
    },
    strict: true,
  });
  const arms = list([values.arms]).map((a) => {
    if (!(EVAL_ARMS as readonly string[]).includes(a))
      throw new EvalUsageError(`--arms: unknown arm "${a}" (known: ${EVAL_ARMS.join(", ")})`);
    return a as EvalArm;
  });
  const teams = list(values.team);
  const runs = list(values.run);
  if (teams.length === 0 && runs.length === 0)
    throw new EvalUsageError("eval run: pass --team <name[@ref]> or --run <id[@step]>");
  for (const t of teams) parseTeamRef(t);
  const suite = suiteArg(values);
  const store = openStoreArg(values.store);
  const { report, stamp, storedKeys } = await runEvaluation({
    store,
    root: workspaceRoot,
    suite,
    teams,
    runs,
    arms,
    backend: {
      backend: backendArg(values.backend),
      baseUrl: values["base-url"],
      apiKey: values["api-key"] ?? process.env.OPENAI_API_KEY,
      device: values.device,
    },
    storeEntries: !values["no-store"],
    log,
  });
  const json = values.out
    ? outPath(values.out)
    : resolve(workspaceRoot, `.troupe/evals/${suite.name}-${stamp}.json`);
  const base = json.replace(/\.json$/, "");
  writeOut(json, `${JSON.stringify(report, null, 2)}\n`);
  writeOut(`${base}.md`, reportMarkdown(report));
  writeOut(`${base}.html`, await reportHtml(report));
  process.stdout.write(`${table(summaryRows(report))}\n\n`);
  process.stdout.write(`report: ${json} (+ .md, .html)\n`);
  for (const key of storedKeys) process.stdout.write(`stored: ${store.uri}/${key}\n`);
  return 0;
}

/** A baseline: a report file, a team ref (its newest stored report of the suite), or a store key. */
async function loadBaseline(
  spec: string,
  current: EvalReport,
  storeUri: string | undefined,
): Promise<{ report: EvalReport; name: string }> {
  const path = outPath(spec);
  if (existsSync(path)) return { report: parseReportText(readFileSync(path, "utf8"), path), name: spec };
  const store = openStoreArg(storeUri);
  if (/\.json$/.test(spec)) {
    if (!(await store.head(spec))) {
      throw new EvalUsageError(`--baseline: "${spec}" is neither a file nor a report in ${store.uri}`);
    }
    return { report: await readStoredReport(store, spec), name: spec };
  }
  const [name, ref] = parseTeamRef(spec);
  const manifest = await createTeamRegistry(store).resolve(name, ref);
  const key = await newestTeamReport(store, name, manifest.version, current.suite.name);
  if (!key) {
    throw new EvalUsageError(
      `--baseline ${spec}: team ${name} v${manifest.version} has no stored ${current.suite.name} report in ${store.uri} (run eval:run -- --team ${spec} --suite ${current.suite.name})`,
    );
  }
  return { report: await readStoredReport(store, key), name: `${name}@v${manifest.version} (${key})` };
}

async function commandGate(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      current: { type: "string" },
      baseline: { type: "string" },
      store: { type: "string" },
      tolerance: { type: "string", default: "0" },
      out: { type: "string" },
    },
    strict: true,
  });
  if (!values.current || !values.baseline)
    throw new EvalUsageError("eval gate: pass --current <report.json> and --baseline <report|alias>");
  const currentPath = outPath(values.current);
  if (!existsSync(currentPath)) throw new EvalUsageError(`--current: no file ${currentPath}`);
  const current = parseReportText(readFileSync(currentPath, "utf8"), currentPath);
  const baseline = await loadBaseline(values.baseline, current, values.store);
  const result = gateReports(current, baseline.report, {
    tolerance: numberArg("tolerance", values.tolerance),
  });
  if (values.out) writeOut(outPath(values.out), gateMarkdown(result, baseline.name));
  if (process.env.GITHUB_STEP_SUMMARY) {
    appendFileSync(process.env.GITHUB_STEP_SUMMARY, gateMarkdown(result, baseline.name));
  }
  if (result.passed) {
    process.stdout.write(`gate passed against ${baseline.name}: every difference within noise\n`);
    process.stdout.write(`${table(gateRows(result.rows))}\n`);
    return 0;
  }
  process.stdout.write(`gate FAILED against ${baseline.name}: what dropped beyond its interval\n`);
  process.stdout.write(`${table(gateRows(result.failures))}\n`);
  for (const note of result.notes) process.stdout.write(`note: ${note}\n`);
  return 1;
}

async function commandNightly(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      lane: { type: "string" },
      suite: { type: "string", default: "nightly" },
      store: { type: "string" },
      ref: { type: "string", default: "latest" },
      teams: { type: "string", multiple: true, default: [] },
      out: { type: "string", default: "nightly-report" },
      backend: { type: "string", default: "auto" },
      device: { type: "string" },
      tolerance: { type: "string", default: "0" },
      tasks: { type: "string" },
      samples: { type: "string" },
    },
    strict: true,
  });
  if (!values.lane || !(LANES as readonly string[]).includes(values.lane)) {
    throw new EvalUsageError(
      `--lane: expected ${LANES.join(" or ")}${values.lane ? `, got "${values.lane}"` : ""}`,
    );
  }
  const suite = suiteArg(values);
  const teams = list(values.teams);
  const result = await runNightly({
    store: openStoreArg(values.store),
    lane: values.lane as Lane,
    suite,
    ref: values.ref,
    out: outPath(values.out),
    backend: { backend: backendArg(values.backend), device: values.device },
    tolerance: numberArg("tolerance", values.tolerance),
    ...(teams.length ? { teams } : {}),
    log,
    summaryFile: process.env.GITHUB_STEP_SUMMARY || undefined,
  });
  process.stdout.write(`${table(summaryRows(result.report))}\n`);
  if (result.gate && !result.passed) {
    process.stdout.write(
      `gate FAILED: what dropped beyond its interval\n${table(gateRows(result.gate.failures))}\n`,
    );
  }
  process.stdout.write(`nightly ${values.lane}: ${result.passed ? "passed" : "FAILED"} (${result.folder})\n`);
  return result.passed ? 0 : 1;
}

/** One line for the user: the error's own message (the first line of it), never a stack. */
function errorLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0]!.trim() || (error as Error).name || "unknown error";
}

/** `<command> --help`: the usage, which lists every command (before a `--` that ends the flags). */
function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== undefined && wantsHelp(rest)) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  try {
    switch (command) {
      case "run":
        return await commandRun(rest);
      case "gate":
        return await commandGate(rest);
      case "nightly":
        return await commandNightly(rest);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        process.stdout.write(`${USAGE}\n`);
        return command === undefined ? 2 : 0;
      default:
        process.stderr.write(`error: unknown command "${command}" (commands: run, gate, nightly)\n`);
        return 2;
    }
  } catch (error) {
    const known =
      error instanceof EvalUsageError ||
      error instanceof ReportError ||
      (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    process.stderr.write(`error: ${errorLine(error)}\n`);
    if (!known && process.env.TROUPE_DEBUG) process.stderr.write(`${(error as Error).stack}\n`);
    return 2;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
