/**
 * The eval command line: `eval gate`'s exit codes (0 within noise, 1 with a table of what
 * dropped), its Markdown for the job summary, and one `error:` line for a bad report, a missing
 * baseline or missing flags (`eval run` is test/run.test.ts, `eval nightly` test/nightly.test.ts).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cli, craftedReport, tempDir } from "./fixtures.ts";

const tmp = tempDir("troupe-eval-cli-");
afterAll(() => tmp.cleanup());

function writeReport(name: string, report: unknown): string {
  const path = join(tmp.root, name);
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  return path;
}

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
