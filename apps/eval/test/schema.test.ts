/** The eval report's schema: a report round-trips through JSON, and anything else is refused naming the file. */
import { describe, expect, it } from "vitest";
import { parseReport } from "../src/schema.ts";
import { craftedReport } from "./fixtures.ts";

describe("report schema", () => {
  it("round-trips a report and refuses unknown fields", () => {
    const report = craftedReport([{ key: "alpha", success: 0.6, passAt1: 0.5, testPassRate: 0.8 }]);
    expect(parseReport(JSON.parse(JSON.stringify(report)), "r")).toEqual(report);
    expect(() => parseReport({ ...report, extra: 1 }, "r.json")).toThrow(/^r\.json: not an eval report/);
  });
});
