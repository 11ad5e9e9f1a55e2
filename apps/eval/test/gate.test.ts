/**
 * The regression gate on crafted reports, both ways: drops within the intervals pass, a drop beyond
 * them fails with a table naming what dropped; and the CLI's exit codes and one-line errors.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { compareEstimates, gateReports } from "../src/gate.ts";
import { reportMarkdown } from "../src/render.ts";
import { parseReport } from "../src/schema.ts";
import { cli, craftedReport, estimate, tempDir } from "./fixtures.ts";

const tmp = tempDir("troupe-gate-");
afterAll(() => tmp.cleanup());

function writeReport(name: string, report: unknown): string {
  const path = join(tmp.root, name);
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  return path;
}

describe("compareEstimates", () => {
  it("calls a drop noise while it is inside the combined interval, a regression beyond it", () => {
    // Half-widths 0.1 and 0.1: the combined allowance is √2·0.1 ≈ 0.141.
    expect(compareEstimates(estimate(0.5, 0.1), estimate(0.4, 0.1)).verdict).toBe("within noise");
    expect(compareEstimates(estimate(0.5, 0.1), estimate(0.36, 0.1)).verdict).toBe("within noise");
    expect(compareEstimates(estimate(0.5, 0.1), estimate(0.35, 0.1)).verdict).toBe("regressed");
    expect(compareEstimates(estimate(0.5, 0.1), estimate(0.65, 0.1)).verdict).toBe("improved");
    // A tolerance widens the allowance.
    expect(compareEstimates(estimate(0.5, 0.1), estimate(0.35, 0.1), 0.05).verdict).toBe("within noise");
    const { delta, allowed } = compareEstimates(estimate(0.5, 0.1), estimate(0.4, 0.1));
    expect(delta).toBeCloseTo(-0.1, 12);
    expect(allowed).toBeCloseTo(Math.SQRT2 * 0.1, 12);
  });
});

describe("gateReports", () => {
  const baseline = craftedReport([
    { key: "alpha", success: 0.6, passAt1: 0.5 },
    { key: "beta", success: 0.3, passAt1: 0.3, testPassRate: 0.7 },
  ]);

  it("passes when every difference is within noise (and when a team is new)", () => {
    const current = craftedReport([
      { key: "alpha", success: 0.52, passAt1: 0.45 },
      { key: "beta", success: 0.35, passAt1: 0.25, testPassRate: 0.68 },
      { key: "gamma", success: 0.1, passAt1: 0.1 },
    ]);
    const result = gateReports(current, baseline);
    expect(result.passed).toBe(true);
    expect(result.failures).toEqual([]);
    expect(
      result.rows.filter((r) => r.verdict === "within noise").map((r) => `${r.key} ${r.metric}`),
    ).toEqual([
      "team:alpha/plan-path success",
      "team:alpha/plan-path mean team return",
      "team:alpha/plan-path pass@1",
      "team:beta/plan-path success",
      "team:beta/plan-path mean team return",
      "team:beta/plan-path pass@1",
      "team:beta/plan-path test pass rate",
    ]);
    expect(result.rows.find((r) => r.key === "team:gamma/plan-path")?.verdict).toBe("new");
  });

  it("fails on a drop beyond the intervals and on a team that is no longer evaluated", () => {
    const current = craftedReport([
      { key: "alpha", success: 0.3, passAt1: 0.48 },
      // beta is missing
    ]);
    const result = gateReports(current, baseline);
    expect(result.passed).toBe(false);
    expect(result.failures.map((r) => `${r.key} ${r.metric} ${r.verdict}`)).toEqual([
      "team:alpha/plan-path success regressed",
      "team:beta/plan-path (entry) missing",
    ]);
  });

  it("notes a change of suite", () => {
    const current = craftedReport([{ key: "alpha", success: 0.6, passAt1: 0.5 }]);
    const other = { ...current, suite: { ...current.suite, name: "full", tasks: 500 } };
    expect(gateReports(other, craftedReport([{ key: "alpha", success: 0.6, passAt1: 0.5 }])).notes).toEqual([
      "suites differ: current full (500 tasks), baseline nightly (64 tasks)",
    ]);
  });
});

describe("eval gate (CLI)", () => {
  const base = () =>
    writeReport("baseline.json", craftedReport([{ key: "alpha", success: 0.6, passAt1: 0.5 }]));

  it("exits 0 within noise and 1 with a table of what dropped", async () => {
    const baseline = base();
    const fine = writeReport("fine.json", craftedReport([{ key: "alpha", success: 0.55, passAt1: 0.5 }]));
    const ok = await cli("gate", "--current", fine, "--baseline", baseline);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain("gate passed against");

    const worse = writeReport("worse.json", craftedReport([{ key: "alpha", success: 0.2, passAt1: 0.1 }]));
    const summary = join(tmp.root, "summary.md");
    process.env.GITHUB_STEP_SUMMARY = summary;
    const bad = await cli(
      "gate",
      "--current",
      worse,
      "--baseline",
      baseline,
      "--out",
      join(tmp.root, "gate.md"),
    );
    delete process.env.GITHUB_STEP_SUMMARY;
    expect(bad.code).toBe(1);
    expect(bad.out).toContain("gate FAILED against");
    const lines = bad.out.split("\n");
    expect(lines[1]).toMatch(/^entry\s+metric\s+baseline\s+current\s+change\s+noise allows\s+verdict$/);
    expect(lines.filter((l) => l.includes("regressed")).map((l) => l.split(/\s{2,}/)[1])).toEqual([
      "success",
      "pass@1",
    ]);
    expect(readFileSync(join(tmp.root, "gate.md"), "utf8")).toContain("**gate: FAILED**");
    expect(readFileSync(summary, "utf8")).toContain("What dropped:");
  });

  it("says in one line what is wrong with a bad report or a missing baseline", async () => {
    const broken = writeReport("broken.json", { ...craftedReport([]), schemaVersion: 2 });
    const r1 = await cli("gate", "--current", broken, "--baseline", base());
    expect(r1.code).toBe(2);
    expect(r1.err).toMatch(
      /^error: .*broken\.json: not an eval report \(schemaVersion 1\): schemaVersion: .*\n$/,
    );
    const r2 = await cli(
      "gate",
      "--current",
      base(),
      "--baseline",
      "nosuch@stable",
      "--store",
      `file://${tmp.root}/empty`,
    );
    expect(r2.code).toBe(2);
    expect(r2.err.split("\n").filter(Boolean)).toHaveLength(1);
    expect(r2.err).toMatch(/^error: .*nosuch/);
    const r3 = await cli("gate", "--current", base());
    expect(r3.err).toBe("error: eval gate: pass --current <report.json> and --baseline <report|alias>\n");
  });
});

describe("report schema and Markdown", () => {
  it("round-trips a report and refuses unknown fields", () => {
    const report = craftedReport([{ key: "alpha", success: 0.6, passAt1: 0.5, testPassRate: 0.8 }]);
    expect(parseReport(JSON.parse(JSON.stringify(report)), "r")).toEqual(report);
    expect(() => parseReport({ ...report, extra: 1 }, "r.json")).toThrow(/^r\.json: not an eval report/);
    const md = reportMarkdown(report);
    expect(md).toContain("| subject | environment | backend | tasks | success % (95% CI) |");
    expect(md).toContain("| alpha@v1 | plan-path | onnx | 64 | 60.0 [50.0, 70.0] |");
    expect(md).toContain("tests passed %");
  });
});
