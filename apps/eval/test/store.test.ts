/**
 * Where eval reports live in a store: next to the team version or run checkpoint they evaluate,
 * keyed by a UTC timestamp that sorts by time, and the nightly lane's runs with their verdicts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { reportMarkdown } from "../src/render.ts";
import { EVAL_REPORT_SCHEMA_VERSION } from "../src/schema.ts";
import {
  entryEvalsPrefix,
  newestTeamReport,
  nightlyPrefix,
  nightlyRecords,
  putText,
  readStoredReport,
  storeEntryReports,
  timestampId,
} from "../src/store.ts";
import { craftedReport, tempDir } from "./fixtures.ts";

const tmp = tempDir("troupe-eval-store-");
afterAll(() => tmp.cleanup());

describe("eval store", () => {
  it("timestampId: UTC to the millisecond, sorting as time does", () => {
    expect(timestampId(new Date("2026-01-01T02:00:00.123Z"))).toBe("20260101-020000.123Z");
    const stamps = ["2026-03-01T00:00:00.000Z", "2025-12-31T23:59:59.999Z", "2026-01-01T00:00:00.000Z"].map(
      (t) => timestampId(new Date(t)),
    );
    expect([...stamps].sort()).toEqual([stamps[1], stamps[2], stamps[0]]);
  });

  it("an entry's folder: its team version's evals, or its run step's (or the warm start's)", () => {
    expect(entryEvalsPrefix({ subject: { kind: "team", name: "tiny", version: 3, ref: "stable" } })).toBe(
      "teams/tiny/evals/00000003/",
    );
    expect(entryEvalsPrefix({ subject: { kind: "run", runId: "r1", step: 30 } })).toBe(
      "runs/r1/evals/00000030/",
    );
    expect(entryEvalsPrefix({ subject: { kind: "run", runId: "r1", step: 4, warmStart: true } })).toBe(
      "runs/r1/evals/warm-start/",
    );
  });

  it("stores each entry as a one-entry report (JSON and Markdown) and finds a version's newest by suite", async () => {
    const report = craftedReport([
      { key: "alpha", success: 0.6, passAt1: 0.5 },
      { key: "beta", success: 0.3, passAt1: 0.3 },
    ]);
    const keys = await storeEntryReports(tmp.store, report, reportMarkdown, "20260101-020000.000Z");
    expect(keys).toEqual([
      "teams/alpha/evals/00000001/nightly-20260101-020000.000Z.json",
      "teams/beta/evals/00000001/nightly-20260101-020000.000Z.json",
    ]);
    const alpha = await readStoredReport(tmp.store, keys[0]!);
    expect(alpha).toEqual({ ...report, entries: [report.entries[0]] });
    expect(alpha.schemaVersion).toBe(EVAL_REPORT_SCHEMA_VERSION);
    expect(new TextDecoder().decode(await tmp.store.get(keys[0]!.replace(/json$/, "md")))).toBe(
      reportMarkdown(alpha),
    );

    await storeEntryReports(tmp.store, report, reportMarkdown, "20260102-020000.000Z");
    const full = { ...report, suite: { ...report.suite, name: "full" } };
    await storeEntryReports(tmp.store, full, reportMarkdown, "20260103-020000.000Z");
    expect(await newestTeamReport(tmp.store, "alpha", 1, "nightly")).toBe(
      "teams/alpha/evals/00000001/nightly-20260102-020000.000Z.json",
    );
    expect(await newestTeamReport(tmp.store, "alpha", 1, "full")).toBe(
      "teams/alpha/evals/00000001/full-20260103-020000.000Z.json",
    );
    expect(await newestTeamReport(tmp.store, "beta", 1, undefined)).toMatch(
      /^teams\/beta\/evals\/00000001\/.*\.json$/,
    );
    expect(await newestTeamReport(tmp.store, "alpha", 2, "nightly")).toBeUndefined();

    await putText(tmp.store, "teams/alpha/evals/00000001/nightly-x.json", "{ not a report");
    await expect(readStoredReport(tmp.store, "teams/alpha/evals/00000001/nightly-x.json")).rejects.toThrow(
      /nightly-x\.json/,
    );
  });

  it("a lane's nightly runs oldest first with their gate verdicts; a folder without a report is skipped", async () => {
    const lane = nightlyPrefix("embedded");
    expect(lane).toBe("nightly/embedded/");
    await putText(tmp.store, `${lane}20260101-020000.000Z/report.json`, "{}");
    await putText(tmp.store, `${lane}20260102-020000.000Z/report.json`, "{}");
    await putText(tmp.store, `${lane}20260102-020000.000Z/gate.json`, JSON.stringify({ passed: false }));
    await putText(tmp.store, `${lane}20260103-020000.000Z/report.json`, "{}");
    await putText(tmp.store, `${lane}20260103-020000.000Z/gate.json`, JSON.stringify({ passed: true }));
    await putText(tmp.store, `${lane}20260104-020000.000Z/gate.json`, JSON.stringify({ passed: true }));
    expect(await nightlyRecords(tmp.store, "embedded")).toEqual([
      {
        stamp: "20260101-020000.000Z",
        reportKey: `${lane}20260101-020000.000Z/report.json`,
        passed: undefined,
      },
      { stamp: "20260102-020000.000Z", reportKey: `${lane}20260102-020000.000Z/report.json`, passed: false },
      { stamp: "20260103-020000.000Z", reportKey: `${lane}20260103-020000.000Z/report.json`, passed: true },
    ]);
    expect(await nightlyRecords(tmp.store, "gpu")).toEqual([]);
  });
});
