/**
 * `eval run` end to end on real tiny ONNX teams in a FileStore: a published team (by alias) and a
 * trained run's checkpoint, the JSON/Markdown/HTML report, the entries stored next to their
 * subjects, and the gate against the team's stored report by alias. A run's checkpoint evaluated
 * with its own (greedy) sampling on the trainer's held-out tasks scores exactly what the trainer's
 * evaluation recorded for that step.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadRecipeText, runRecipe } from "@troupe/trainer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlanPathServer } from "../../../libs/teams/test/openai-server.ts";
import { parseReportText } from "../src/schema.ts";
import { cli, publishTinyTeam, tempDir } from "./fixtures.ts";

const tmp = tempDir("troupe-eval-run-");
const storeUri = `file://${join(tmp.root, "store")}`;
const suitePath = join(tmp.root, "tiny.yaml");
afterAll(() => tmp.cleanup());

/** `eval run` of the tiny suite on the test store, with `flags`. */
const evalRun = (...flags: string[]) => cli("run", ...flags, "--suite", suitePath, "--store", storeUri);
/** The same for the tiny team, its report written to `out` only (not stored next to the team). */
const evalTinyTo = (out: string, ...flags: string[]) =>
  evalRun("--team", "tiny", ...flags, "--out", out, "--no-store");

/** A tiny Plan-Path run's recipe, with its own `name`, `sft` and `train` lines. */
const tinyRecipe = (lines: string) =>
  loadRecipeText(`
seed: 3
environment:
  name: plan-path
  options: { roles: compact, maxTurns: 2, rows: 4, cols: 4, blockedFraction: 0.1, minPathLength: 2 }
model: { hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1 }
strategy: { name: parallel, groupSize: 2 }
sampling: { temperature: 1, maxTokens: 8 }
${lines}
`);

const recipe = tinyRecipe(`name: eval-run
train: { steps: 1, tasksPerStep: 2, evalEvery: 0, evalTasks: 4, evalTemperature: 0, checkpointEvery: 1 }`);

// A compare's warm-start arm: a warm start and no RL step (its team is the warm start).
const warmStartOnly = tinyRecipe(`name: eval-warm-start
sft: { steps: 2, batchSize: 4, mistakeRate: 0 }
train: { steps: 0, tasksPerStep: 2, evalEvery: 1, evalTasks: 4, evalTemperature: 0, checkpointEvery: 1 }`);

beforeAll(async () => {
  await runRecipe({
    recipe: warmStartOnly,
    runId: "ws",
    store: tmp.store,
    reporter: { step() {}, eval() {}, note() {} },
  });
  writeFileSync(suitePath, "name: tiny\ntasks: 4\nsamples: 3\ntemperature: 1\nk: [1, 3, 5]\n");
  await publishTinyTeam(tmp.store, "tiny", "stable");
  await runRecipe({
    recipe,
    runId: "r1",
    store: tmp.store,
    reporter: { step() {}, eval() {}, note() {} },
  });
}, 120_000);

describe("eval run", () => {
  it("evaluates a team by alias and a run checkpoint into one report, stored next to each", async () => {
    const out = join(tmp.root, "out", "report.json");
    const { code, out: stdout, err } = await evalRun("--team", "tiny@stable", "--run", "r1", "--out", out);
    expect(err).not.toMatch(/^error/m);
    expect(code).toBe(0);
    expect(stdout).toContain(`report: ${out} (+ .md, .html)`);
    const report = parseReportText(readFileSync(out, "utf8"), out);
    expect(report.suite).toEqual({
      name: "tiny",
      tasks: 4,
      samples: 3,
      temperature: 1,
      topP: 1,
      k: [1, 3, 5],
      seed: 0,
    });
    expect(report.entries.map((e) => [e.label, e.key, e.backend])).toEqual([
      ["tiny@v1", "team:tiny/plan-path", "onnx"],
      ["run r1@step 0", "run:r1/plan-path", "onnx"],
    ]);
    for (const entry of report.entries) {
      expect(entry.tasks).toBe(4);
      // k above the samples is left out
      expect(Object.keys(entry.metrics.passAtK)).toEqual(["1", "3"]);
      const { success } = entry.metrics;
      expect(success.n).toBe(4);
      expect(success.low).toBeLessThanOrEqual(success.value);
      expect(success.high).toBeGreaterThanOrEqual(success.value);
      expect(entry.metrics.passAtK["3"]!.value).toBeGreaterThanOrEqual(entry.metrics.passAtK["1"]!.value);
      expect(entry.metrics.testPassRate).toBeUndefined(); // Plan-Path runs no tests
      expect(Object.keys(entry.usage).sort()).toEqual(["fixer", "planner"]);
      expect(entry.usage.planner!.calls).toBeGreaterThanOrEqual(4 * 4); // ≥ one call per episode
      expect(entry.latency.episodes).toBe(4 * 4);
      expect(entry.examples.map((x) => x.label)).toEqual(["best", "median", "worst"]);
      expect(entry.examples[0]!.turns[0]!.agent).toBe("planner");
      // Success by maze difficulty (the shortest path's length, ≥ minPathLength 2): the same 4
      // tasks and successes, split by length, easiest first.
      const byDifficulty = entry.metrics.byDifficulty!;
      const levels = byDifficulty.map((d) => d.difficulty);
      expect(levels).toEqual([...levels].sort((a, b) => a - b));
      expect(Math.min(...levels)).toBeGreaterThanOrEqual(2);
      expect(byDifficulty.reduce((s, d) => s + d.success.n, 0)).toBe(4);
      expect(byDifficulty.reduce((s, d) => s + d.success.value * d.success.n, 0)).toBeCloseTo(
        4 * success.value,
        10,
      );
    }
    // The run's checkpoint, greedy on the trainer's held-out tasks, scores what the trainer recorded.
    const runEntry = report.entries[1]!;
    const stepEval = JSON.parse(
      readFileSync(join(tmp.root, "store", "runs", "r1", "metrics.jsonl"), "utf8")
        .trim()
        .split("\n")
        .at(-1)!,
    ) as { metrics: Record<string, number> };
    expect(runEntry.metrics.success.value).toBe(stepEval.metrics["eval/successRate"]);
    expect(runEntry.metrics.meanTeamReturn.value).toBeCloseTo(stepEval.metrics["eval/meanTeamReturn"]!, 10);

    // Markdown and HTML next to the JSON; one-entry reports next to the team and the run in the store.
    expect(readFileSync(out.replace(/\.json$/, ".md"), "utf8")).toContain(
      "| tiny@v1 | plan-path | onnx | 4 |",
    );
    expect(readFileSync(out.replace(/\.json$/, ".html"), "utf8")).toContain(
      '<figure class="chart" id="metrics-0">',
    );
    expect(readFileSync(out.replace(/\.json$/, ".md"), "utf8")).toContain(
      "| difficulty | tiny@v1 solved | run r1@step 0 solved |",
    );
    expect(readFileSync(out.replace(/\.json$/, ".html"), "utf8")).toContain(
      '<figure class="chart" id="by-difficulty">',
    );
    const stored = stdout.split("\n").filter((l) => l.startsWith("stored: "));
    expect(stored).toHaveLength(2);
    expect(stored[0]).toMatch(/\/teams\/tiny\/evals\/00000001\/tiny-\d{8}-\d{6}\.\d{3}Z\.json$/);
    expect(stored[1]).toMatch(/\/runs\/r1\/evals\/00000000\/tiny-\d{8}-\d{6}\.\d{3}Z\.json$/);
    for (const line of stored) {
      const path = line.slice("stored: file://".length);
      expect(existsSync(path) && existsSync(path.replace(/\.json$/, ".md"))).toBe(true);
    }

    // The same evaluation again is the same within noise (it is the same numbers: seeds are fixed).
    const again = join(tmp.root, "out", "again.json");
    await evalTinyTo(again);
    const gate = await cli("gate", "--current", again, "--baseline", "tiny@stable", "--store", storeUri);
    expect(gate.code).toBe(0);
    expect(gate.out).toMatch(/^gate passed against tiny@v1 \(teams\/tiny\/evals\/00000001\/tiny-.*\.json\)/);
    const first = parseReportText(readFileSync(again, "utf8"), again).entries[0]!.metrics;
    expect(first).toEqual(report.entries[0]!.metrics);
  });

  it("evaluates through an OpenAI-compatible server (a stub that plays Plan-Path perfectly)", async () => {
    const server = await PlanPathServer.start();
    try {
      const out = join(tmp.root, "out", "openai.json");
      const { code, err } = await evalTinyTo(out, "--backend", "openai", "--base-url", `${server.url}/v1`);
      expect(err).not.toMatch(/^error/m);
      expect(code).toBe(0);
      const [entry] = parseReportText(readFileSync(out, "utf8"), out).entries;
      expect(entry!.backend).toBe("openai");
      expect(entry!.metrics.success).toEqual({
        value: 1,
        low: expect.any(Number),
        high: 1,
        n: 4,
        method: "wilson",
      });
      expect(entry!.metrics.passAtK["1"]).toEqual({ value: 1, low: 1, high: 1, n: 4, method: "t" });
      expect(entry!.metrics.passAtK["3"]!.value).toBe(1);
      // Every episode's turns went to the server: <team>-<policy> models.
      expect(new Set(server.requests.map((r) => r.model))).toEqual(new Set(["tiny-planner", "tiny-fixer"]));
    } finally {
      await server.close();
    }
  });

  it("evaluates the papers' test-time baselines with the team's policies (--arms)", async () => {
    const out = join(tmp.root, "out", "arms.json");
    const { code, err } = await evalTinyTo(out, "--arms", "team,single,sequential,discussion");
    expect(err).not.toMatch(/^error/m);
    expect(code).toBe(0);
    const { entries } = parseReportText(readFileSync(out, "utf8"), out);
    expect(entries.map((e) => [e.label, e.arm])).toEqual([
      ["tiny@v1", undefined],
      ["tiny@v1 · single", "single"],
      ["tiny@v1 · sequential", "sequential"],
      ["tiny@v1 · discussion", "discussion"],
    ]);
    // 4 tasks × (1 + 3 samples) = 16 episodes of one inner turn each: one call per role, the single
    // agent answering alone, and every role twice in a discussion.
    const calls = (i: number) =>
      Object.fromEntries(Object.entries(entries[i]!.usage).map(([r, u]) => [r, u.calls]));
    expect(calls(1)).toEqual({ single: 16 });
    expect(calls(2)).toEqual({ planner: 16, fixer: 16 });
    expect(calls(3)).toEqual({ planner: 32, fixer: 32 });
    const bad = await evalRun("--team", "tiny", "--arms", "team,solo");
    expect(bad.err).toBe(
      'error: --arms: unknown arm "solo" (known: team, single, naive-concat, sequential, discussion)\n',
    );
  });

  it("evaluates a run's warm start (id@warm-start): what the run measured before RL", async () => {
    const out = join(tmp.root, "out", "warm-start.json");
    const { code, err } = await evalRun("--run", "ws@warm-start", "--out", out, "--no-store");
    expect(err).not.toMatch(/^error/m);
    expect(code).toBe(0);
    const entry = parseReportText(readFileSync(out, "utf8"), out).entries[0]!;
    expect(entry.subject).toEqual({ kind: "run", runId: "ws", step: 1, warmStart: true });
    expect([entry.label, entry.key]).toEqual(["run ws@warm-start", "run:ws@warm-start/plan-path"]);
    const before = JSON.parse(
      readFileSync(join(tmp.root, "store", "runs", "ws", "metrics", "00000000.eval-start.json"), "utf8"),
    ) as { metrics: { successRate: number; meanTeamReturn: number } };
    expect(entry.metrics.success.value).toBe(before.metrics.successRate);
    expect(entry.metrics.meanTeamReturn.value).toBeCloseTo(before.metrics.meanTeamReturn, 10);

    const noStep = await evalRun("--run", "ws");
    expect(noStep.err).toBe(
      "error: run ws has no committed step (its team before RL: --run ws@warm-start)\n",
    );
    const noWarmStart = await evalRun("--run", "r1@warm-start");
    expect(noWarmStart.err).toBe("error: run r1: its recipe has no warm start\n");
    const badRef = await evalRun("--run", "r1@latest");
    expect(badRef.err).toBe('error: --run: expected id[@step|@warm-start], got "r1@latest"\n');
  });

  it("names what is wrong in one line", async () => {
    const r1 = await evalRun("--team", "nosuch");
    expect(r1.code).toBe(2);
    expect(r1.err.trim().split("\n")).toHaveLength(1);
    expect(r1.err).toMatch(/^error: .*nosuch/);
    const r2 = await cli("run", "--team", "tiny", "--suite", "nope");
    expect(r2.err).toMatch(/^error: suite "nope" not found: expected nightly, full, held-out or a YAML file/);
    const r3 = await cli("run", "--team", "tiny", "--suite", suitePath, "--backend", "gpu");
    expect(r3.err).toBe('error: --backend: expected auto, onnx, torch, openai, got "gpu"\n');
    writeFileSync(join(tmp.root, "bad.yaml"), "name: bad\ntasks: 0\nsamples: 1\ntemperature: 1\n");
    const r4 = await cli("run", "--team", "tiny", "--suite", join(tmp.root, "bad.yaml"));
    expect(r4.err).toMatch(/^error: suite .*bad\.yaml: tasks: .*\n$/);
    const r5 = await cli("run");
    expect(r5.err).toBe("error: eval run: pass --team <name[@ref]> or --run <id[@step]>\n");
  });
});
