import { describe, expect, it } from "vitest";
import { seedInterval } from "../../src/reports/statistics.ts";

describe("statistics over seeds", () => {
  it("t-interval over seeds: [0.2, 0.3, 0.4] → 0.3 ± 4.303 · 0.1/√3", () => {
    const { mean, ci95 } = seedInterval([0.2, 0.3, 0.4]);
    expect(mean).toBeCloseTo(0.3, 12);
    expect(ci95![0]).toBeCloseTo(0.3 - (4.303 * 0.1) / Math.sqrt(3), 12);
    expect(ci95![1]).toBeCloseTo(0.3 + (4.303 * 0.1) / Math.sqrt(3), 12);
    expect(seedInterval([0.5]).ci95).toBeUndefined();
    // Rates are clipped to [0, 1]; differences of rates (a gain) to [−1, 1].
    expect(seedInterval([0.0, 0.1]).ci95![0]).toBe(0);
    expect(seedInterval([-0.1, -0.05, 0], [-1, 1]).ci95![0]).toBeCloseTo(
      -0.05 - (4.303 * 0.05) / Math.sqrt(3),
      12,
    );
    expect(seedInterval([-0.1, 0.1], [-1, 1]).ci95).toEqual([-1, 1]);
  });
});
