/** Success by task difficulty: the counts, intervals and table from known episodes. */
import { describe, expect, it } from "vitest";
import { successByDifficulty } from "../src/evaluate.ts";
import { difficultyRows, reportMarkdown } from "../src/render.ts";
import { craftedReport } from "./fixtures.ts";

describe("success by difficulty", () => {
  const byDifficulty = successByDifficulty(
    [5, 3, 3, 5, 4, 3],
    [
      { solved: false },
      { solved: true },
      { solved: true },
      { solved: true },
      { solved: null },
      { solved: false },
    ],
  );

  it("counts each difficulty's tasks and successes, easiest first, with Wilson intervals", () => {
    expect(byDifficulty.map((d) => [d.difficulty, d.success.n, d.success.value])).toEqual([
      [3, 3, 2 / 3],
      [4, 1, 0], // not judged is not solved
      [5, 2, 0.5],
    ]);
    // Wilson 95% for 2/3: [0.2077, 0.9385].
    expect(byDifficulty[0]!.success.low).toBeCloseTo(0.2077, 4);
    expect(byDifficulty[0]!.success.high).toBeCloseTo(0.9385, 4);
    expect(byDifficulty.every((d) => d.success.method === "wilson")).toBe(true);
  });

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
