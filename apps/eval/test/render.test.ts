/** The report's tables and Markdown: success by difficulty, and the summary table of each entry. */
import { describe, expect, it } from "vitest";
import { successByDifficulty } from "../src/evaluate.ts";
import { difficultyRows, reportMarkdown } from "../src/render.ts";
import { craftedReport, sixEpisodesByDifficulty } from "./fixtures.ts";

describe("success by difficulty", () => {
  const byDifficulty = sixEpisodesByDifficulty();

  it("tables a column per entry that has a breakdown, a row per difficulty", () => {
    const report = craftedReport([
      { key: "alpha", success: 0.5, passAt1: 0.5 },
      { key: "beta", success: 0.5, passAt1: 0.5 },
    ]);
    expect(difficultyRows(report)).toEqual([]);
    expect(reportMarkdown(report)).not.toContain("Success by difficulty");
    const withBreakdown = {
      ...report,
      entries: [
        { ...report.entries[0]!, metrics: { ...report.entries[0]!.metrics, byDifficulty } },
        {
          ...report.entries[1]!,
          metrics: {
            ...report.entries[1]!.metrics,
            byDifficulty: successByDifficulty([3, 6], [{ solved: true }, { solved: true }]),
          },
        },
      ],
    };
    expect(difficultyRows(withBreakdown)).toEqual([
      { difficulty: 3, "alpha@v1 solved": "2/3 (66.7%)", "beta@v1 solved": "1/1 (100.0%)" },
      { difficulty: 4, "alpha@v1 solved": "0/1 (0.0%)", "beta@v1 solved": "-" },
      { difficulty: 5, "alpha@v1 solved": "1/2 (50.0%)", "beta@v1 solved": "-" },
      { difficulty: 6, "alpha@v1 solved": "-", "beta@v1 solved": "1/1 (100.0%)" },
    ]);
    expect(reportMarkdown(withBreakdown)).toContain("### Success by difficulty");
  });
});

describe("report Markdown", () => {
  it("a row per entry: subject, environment, backend, tasks and success with its interval; tests passed for coding", () => {
    const report = craftedReport([{ key: "alpha", success: 0.6, passAt1: 0.5, testPassRate: 0.8 }]);
    const md = reportMarkdown(report);
    expect(md).toContain("| subject | environment | backend | tasks | success % (95% CI) |");
    expect(md).toContain("| alpha@v1 | plan-path | onnx | 64 | 60.0 [50.0, 70.0] |");
    expect(md).toContain("tests passed %");
  });
});
