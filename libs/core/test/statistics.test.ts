import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mean } from "../src/statistics.ts";

describe("mean", () => {
  it("sums left to right and divides by the count", () => {
    expect(mean([1, 2, 3, 6])).toBe(3);
    expect(mean([0.5])).toBe(0.5);
    // Left to right: (0.1 + 0.1) + 0.1 = 0.30000000000000004, / 3.
    expect(mean([0.1, 0.1, 0.1])).toBe(0.10000000000000002);
  });

  it("refuses an empty list: a mean of nothing is no number", () => {
    expect(() => mean([])).toThrow("mean of an empty list");
  });

  it("lies between the smallest and the largest value (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: 1 }), (xs) => {
        const m = mean(xs);
        expect(m).toBeGreaterThanOrEqual(Math.min(...xs));
        expect(m).toBeLessThanOrEqual(Math.max(...xs));
      }),
    );
  });
});
