/**
 * The nightly workflow end to end against a real S3 bucket (Ceph's RADOS gateway on 127.0.0.1,
 * started by the storage library's globalSetup): a tiny team is published into the bucket, then the
 * workflow's own "eval" steps — their `run:` lines with their `env:`, the secrets and inputs filled
 * in as GitHub would — run in bash from the repository root, exactly as the jobs call them:
 *
 *   1. the embedded lane, first nightly: the report, no gate (no earlier nightly), the HTML page;
 *   2. the embedded lane again: the gate against the first, passed (same seeds, same numbers);
 *   3. after a better earlier nightly lands in the store: the gate fails, the step exits 1 and the
 *      job summary has the table of what dropped;
 *   4. the GPU lane: no GPU team in the store, an empty report, exit 0.
 * The workflow's shape (triggers, permissions, concurrency, timeouts, runners, artifacts) is checked
 * too; the linter (action-validator) runs in `nx run eval:lint`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { S3Store } from "@troupe/storage/node";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse as parseYaml } from "yaml";
import type {} from "../../../libs/storage/test/ceph-setup.ts"; // types of inject("s3")
import { parseReportText } from "../src/schema.ts";
import { nightlyRecords, timestampId } from "../src/store.ts";
import { craftedReport, publishTinyTeam } from "./fixtures.ts";

const repoRoot = resolve(fileURLToPath(new URL("../../..", import.meta.url)));
const workflowPath = join(repoRoot, ".github/workflows/nightly-eval.yml");
const BUCKET = "troupe-test";
const prefix = `eval-nightly-${process.pid}-${Date.now()}`;
const tmp = mkdtempSync(join(tmpdir(), "troupe-nightly-"));
const suitePath = join(tmp, "tiny-suite.yaml");

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
  if?: string;
}
interface Job {
  "runs-on": string | string[];
  "timeout-minutes": number;
  steps: Step[];
}
interface Workflow {
  on: { schedule: { cron: string }[]; workflow_dispatch: { inputs: Record<string, unknown> } };
  permissions: Record<string, string>;
  concurrency: { group: string };
  jobs: Record<string, Job>;
}

const workflow = parseYaml(readFileSync(workflowPath, "utf8")) as Workflow;
let store: S3Store;

/** Fills in `${{ … }}` as GitHub would for this test: secrets, variables, inputs, runner.temp. */
function expand(text: string, runnerTemp: string): string {
  const s3 = inject("s3");
  const values: Record<string, string> = {
    "secrets.TROUPE_EVAL_S3_BUCKET": `${BUCKET}/${prefix}`,
    "secrets.TROUPE_EVAL_S3_ENDPOINT": s3.endpoint,
    "secrets.TROUPE_EVAL_S3_ACCESS_KEY_ID": s3.accessKeyId,
    "secrets.TROUPE_EVAL_S3_SECRET_ACCESS_KEY": s3.secretAccessKey,
    "vars.TROUPE_EVAL_S3_REGION || 'us-east-1'": s3.region,
    "inputs.suite || 'nightly'": suitePath,
    "runner.temp": runnerTemp,
  };
  return text.replace(/\$\{\{\s*(.*?)\s*\}\}/g, (_m, expr: string) => {
    if (!(expr in values)) throw new Error(`the test does not know the expression \${{ ${expr} }}`);
    return values[expr]!;
  });
}

/** Runs a job's step with id "eval" the way a runner does (bash -eo pipefail, the step's env). */
function runEvalStep(job: string, runnerTemp: string) {
  const step = workflow.jobs[job]!.steps.find((s) => s.id === "eval");
  if (!step?.run) throw new Error(`job ${job} has no step with id "eval" and a run: line`);
  const env: Record<string, string> = {};
  // The runner's environment without this test's own Nx/Vitest task variables.
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(NX_|VITEST|npm_|INIT_CWD$)/.test(k)) env[k] = v;
  }
  for (const [k, v] of Object.entries(step.env ?? {})) env[k] = expand(String(v), runnerTemp);
  const summary = join(runnerTemp, "step-summary.md");
  env.GITHUB_STEP_SUMMARY = summary;
  writeFileSync(summary, "");
  const result = spawnSync(
    "bash",
    ["--noprofile", "--norc", "-eo", "pipefail", "-c", expand(step.run, runnerTemp)],
    {
      cwd: repoRoot,
      env,
      encoding: "utf8",
      timeout: 240_000,
    },
  );
  return {
    code: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    summary: readFileSync(summary, "utf8"),
    out: env.OUT!,
  };
}

beforeAll(async () => {
  writeFileSync(suitePath, "name: tiny\ntasks: 3\nsamples: 2\ntemperature: 1\nk: [1, 2]\n");
  const s3 = inject("s3");
  store = new S3Store({
    bucket: BUCKET,
    prefix,
    endpoint: s3.endpoint,
    region: s3.region,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    createBucket: true,
  });
  await publishTinyTeam(store, "tiny", "stable");
}, 120_000);

afterAll(async () => {
  for (const { key } of (await store?.list("")) ?? []) await store.delete(key);
  rmSync(tmp, { recursive: true, force: true });
});

describe("the nightly-eval workflow", () => {
  it("runs nightly and on demand, read-only, one at a time, with time limits, CPU and gpu runners", () => {
    expect(workflow.on.schedule[0]!.cron).toMatch(/^\S+ \S+ \* \* \*$/);
    expect(Object.keys(workflow.on.workflow_dispatch.inputs)).toEqual(["suite"]);
    expect(workflow.permissions).toEqual({ contents: "read" });
    expect(workflow.concurrency.group).toBe("nightly-eval");
    expect(Object.keys(workflow.jobs)).toEqual(["embedded", "gpu"]);
    expect(workflow.jobs.gpu!["runs-on"]).toContain("gpu");
    for (const job of Object.values(workflow.jobs)) {
      expect(job["timeout-minutes"]).toBeGreaterThan(0);
      // Installs with the README's command; uploads the report whatever the gate said.
      expect(job.steps.some((s) => s.run === "npm ci")).toBe(true);
      const upload = job.steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"));
      expect(upload?.if).toBe(["$", "{{ !cancelled() }}"].join(""));
      expect(upload?.with?.path).toBe(`${job.steps.find((s) => s.id === "eval")!.env!.OUT}/`);
      // Secrets reach only the step that needs them.
      for (const step of job.steps.filter((s) => s.id !== "eval")) {
        expect(JSON.stringify(step)).not.toContain("secrets.");
      }
    }
  });

  it("evaluates the store's teams, gates against the last good nightly and fails on a drop", {
    timeout: 600_000,
  }, async () => {
    // 1. The first nightly: a report, no baseline.
    const first = runEvalStep("embedded", mkdtempSync(join(tmp, "run1-")));
    expect(first.stderr).not.toMatch(/^error/m);
    expect(first.code).toBe(0);
    for (const name of ["report.json", "report.md", "report.html", "gate.json"]) {
      expect(existsSync(join(first.out, name))).toBe(true);
    }
    const report = parseReportText(readFileSync(join(first.out, "report.json"), "utf8"), "report.json");
    expect(report.store).toBe(`s3://${BUCKET}/${prefix}`);
    expect(report.entries.map((e) => [e.label, e.backend, e.tasks])).toEqual([["tiny@v1", "onnx", 3]]);
    expect(JSON.parse(readFileSync(join(first.out, "gate.json"), "utf8"))).toMatchObject({
      passed: true,
      baseline: null,
    });
    expect(first.summary).toContain("| tiny@v1 | plan-path | onnx | 3 |");
    expect(first.summary).toContain("**gate: no baseline**");
    const html = readFileSync(join(first.out, "report.html"), "utf8");
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<figure class="chart" id="metrics-0"><svg');
    // In the store: the nightly record and the team's own report next to it.
    let records = await nightlyRecords(store, "embedded");
    expect(records.map((r) => r.passed)).toEqual([true]);
    expect(await store.head(`nightly/embedded/${records[0]!.stamp}/report.html`)).toBeDefined();
    expect((await store.list("teams/tiny/evals/00000001/")).map((o) => o.key)).toEqual([
      expect.stringMatching(/^teams\/tiny\/evals\/00000001\/tiny-.*\.json$/),
      expect.stringMatching(/^teams\/tiny\/evals\/00000001\/tiny-.*\.md$/),
    ]);

    // 2. The next nightly: gated against the first, within noise.
    const second = runEvalStep("embedded", mkdtempSync(join(tmp, "run2-")));
    expect(second.code).toBe(0);
    const gate2 = JSON.parse(readFileSync(join(second.out, "gate.json"), "utf8"));
    expect(gate2.passed).toBe(true);
    expect(gate2.baseline).toBe(records[0]!.reportKey);
    expect(gate2.rows.map((r: { verdict: string }) => r.verdict)).toEqual(Array(4).fill("within noise"));
    expect(second.summary).toContain("**gate: passed** against nightly embedded");

    // 3. A better nightly lands (crafted): tonight's numbers drop beyond their intervals.
    const better = craftedReport([{ key: "tiny", success: 1, passAt1: 1, half: 0.001 }]);
    const stamp = timestampId(); // after the second run, before the third: its newest earlier nightly
    await store.put(`nightly/embedded/${stamp}/gate.json`, new TextEncoder().encode('{"passed": true}\n'));
    await store.put(
      `nightly/embedded/${stamp}/report.json`,
      new TextEncoder().encode(JSON.stringify(better)),
    );
    const third = runEvalStep("embedded", mkdtempSync(join(tmp, "run3-")));
    expect(third.code).toBe(1);
    expect(third.stdout).toContain("gate FAILED");
    expect(third.summary).toContain(`**gate: FAILED** against nightly embedded ${stamp}`);
    expect(third.summary).toContain("What dropped:");
    expect(readFileSync(join(third.out, "report.html"), "utf8")).toContain('class="verdict-fail"');
    records = await nightlyRecords(store, "embedded");
    expect(records.map((r) => r.passed)).toEqual([true, true, true, false]);

    // 4. The GPU lane: no GPU team here.
    const gpu = runEvalStep("gpu", mkdtempSync(join(tmp, "gpu-")));
    expect(gpu.stderr).toContain("nightly gpu: 0 team(s)");
    expect(gpu.code).toBe(0);
    expect(parseReportText(readFileSync(join(gpu.out, "report.json"), "utf8"), "gpu").entries).toEqual([]);
  });
});
