/**
 * The regression gate on crafted reports, both ways: drops within the intervals pass, a drop beyond
 * them fails with a table naming what dropped (the CLI's exit codes and one-line errors are
 * test/main.test.ts).
 */
import { describe, expect, it } from "vitest";
import { compareEstimates, gateReports } from "../src/gate.ts";
import { craftedReport, estimate } from "./fixtures.ts";

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
