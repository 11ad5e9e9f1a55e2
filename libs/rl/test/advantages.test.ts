import { mean } from "@troupe/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { groupAdvantages, sampleStd, std } from "../src/advantages.ts";

describe("groupAdvantages", () => {
  const returns = [1, 2, 3, 6]; // mean 3, population std √3.5

  it("mean baseline: R − mean", () => {
    expect(groupAdvantages(returns, { baseline: "mean", normalizeStd: false, eps: 0 })).toEqual([
      -2, -1, 0, 3,
    ]);
  });

  it("mean baseline, std-normalised: (R − mean) / (population std + ε)", () => {
    const s = Math.sqrt(3.5); // √((4 + 1 + 0 + 9) / 4)
    const got = groupAdvantages(returns, { baseline: "mean", normalizeStd: true, eps: 1e-12 });
    [-2, -1, 0, 3].forEach((a, i) => expect(got[i]).toBeCloseTo(a / (s + 1e-12), 14));
    expect(got[0]).toBeCloseTo(-1.0690449676, 9);
  });

  it('std: "sample" divides by the unbiased std √(Σ(R − mean)² / (G − 1)), as verl / PettingLLMs', () => {
    const s = Math.sqrt(14 / 3); // √((4 + 1 + 0 + 9) / 3)
    expect(sampleStd(returns)).toBeCloseTo(s, 15);
    const got = groupAdvantages(returns, { baseline: "mean", normalizeStd: true, eps: 1e-6, std: "sample" });
    [-2, -1, 0, 3].forEach((a, i) => expect(got[i]).toBeCloseTo(a / (s + 1e-6), 14));
    expect(got[3]).toBeCloseTo(1.3887297, 6); // 3 / 2.1602469 (vs 1.6035674 with the population std)
  });

  it("rloo: R_i − mean of the others", () => {
    const got = groupAdvantages(returns, { baseline: "rloo", normalizeStd: false, eps: 0 });
    // A_0 = 1 − (2+3+6)/3 = −8/3; A_3 = 6 − (1+2+3)/3 = 4
    [-8 / 3, 2 - 10 / 3, 3 - 3, 4].forEach((v, i) => expect(got[i]).toBeCloseTo(v, 12));
  });

  it("max baseline: R − max", () => {
    expect(groupAdvantages(returns, { baseline: "max", normalizeStd: false, eps: 0 })).toEqual([
      -5, -4, -3, 0,
    ]);
  });

  it("raw: R", () => {
    expect(groupAdvantages(returns, { baseline: "raw", normalizeStd: false, eps: 0 })).toEqual(returns);
  });

  it("a constant group has zero advantages when std-normalised, for every baseline and std", () => {
    for (const baseline of ["mean", "rloo", "max", "raw"] as const)
      for (const kind of ["population", "sample"] as const) {
        expect(groupAdvantages([2, 2, 2], { baseline, normalizeStd: true, eps: 1e-6, std: kind })).toEqual([
          0, 0, 0,
        ]);
        // A group of one is constant too (the sample std of one value is undefined).
        expect(groupAdvantages([0.5], { baseline, normalizeStd: true, eps: 1e-6, std: kind })).toEqual([0]);
      }
  });

  it("raw + std on a constant group is 0, not R / ε (it was 0.5 / 1e-6 = 500000)", () => {
    expect(groupAdvantages([0.5, 0.5], { baseline: "raw", normalizeStd: true, eps: 1e-6 })).toEqual([0, 0]);
    // Equal returns whose mean is off in the last bit (σ ≈ 1.4e-17, not 0) are still constant:
    // mean([0.1, 0.1, 0.1]) = 0.10000000000000002.
    expect(mean([0.1, 0.1, 0.1])).not.toBe(0.1);
    expect(groupAdvantages([0.1, 0.1, 0.1], { baseline: "raw", normalizeStd: true, eps: 1e-6 })).toEqual([
      0, 0, 0,
    ]);
    // Without std-normalisation raw stays REINFORCE: A = R, even in a constant group.
    expect(groupAdvantages([0.5, 0.5], { baseline: "raw", normalizeStd: false, eps: 1e-6 })).toEqual([
      0.5, 0.5,
    ]);
    // A non-constant group: raw is divided uncentred, R / (σ + ε) with σ = 0.25.
    expect(groupAdvantages([0.5, 1], { baseline: "raw", normalizeStd: true, eps: 1e-6 })).toEqual([
      0.5 / (0.25 + 1e-6),
      1 / (0.25 + 1e-6),
    ]);
  });

  it("refuses eps ≤ 0 with std-normalisation (ε = 0 made constant groups NaN); eps is unused without it", () => {
    for (const eps of [0, -1e-6, Number.NaN])
      expect(() => groupAdvantages([1, 2], { baseline: "max", normalizeStd: true, eps })).toThrow(
        /eps must be > 0 when normalizeStd is true/,
      );
    expect(groupAdvantages([1, 2], { baseline: "max", normalizeStd: false, eps: 0 })).toEqual([-1, 0]);
    // Distinct returns whose squared deviations underflow: σ = 0, and ε keeps A finite.
    const tiny = groupAdvantages([1e-200, 2e-200], { baseline: "mean", normalizeStd: true, eps: 1e-6 });
    expect(std([1e-200, 2e-200])).toBe(0);
    expect(tiny.every(Number.isFinite)).toBe(true);
  });

  it("rejects non-finite returns", () => {
    expect(() => groupAdvantages([1, Number.NaN])).toThrow(/non-finite/);
  });

  it("mean and rloo baselines sum to zero (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -100, max: 100, noNaN: true }), { minLength: 2, maxLength: 16 }),
        fc.constantFrom("mean" as const, "rloo" as const),
        fc.boolean(),
        (rs, baseline, normalizeStd) => {
          const a = groupAdvantages(rs, { baseline, normalizeStd, eps: 1e-6 });
          const scale = Math.max(1, ...rs.map(Math.abs)) * (normalizeStd ? 1 / (std(rs) + 1e-6) : 1);
          expect(Math.abs(a.reduce((x, y) => x + y, 0))).toBeLessThan(1e-9 * scale * rs.length);
        },
      ),
    );
  });

  it("std helpers", () => {
    expect(std([1, 3])).toBe(1);
    expect(sampleStd([1, 3])).toBe(Math.SQRT2);
    expect(() => sampleStd([1])).toThrow(/at least 2/);
  });
});
