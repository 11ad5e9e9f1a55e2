import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { groupAdvantages, mean, std } from "../src/advantages.ts";

describe("groupAdvantages", () => {
  const returns = [1, 2, 3, 6]; // mean 3, population std √3.5

  it("mean baseline: R − mean", () => {
    expect(groupAdvantages(returns, { baseline: "mean", normalizeStd: false, eps: 0 })).toEqual([
      -2, -1, 0, 3,
    ]);
  });

  it("mean baseline, std-normalised: (R − mean) / std", () => {
    const s = Math.sqrt(3.5);
    const got = groupAdvantages(returns, { baseline: "mean", normalizeStd: true, eps: 0 });
    [-2 / s, -1 / s, 0, 3 / s].forEach((v, i) => expect(got[i]).toBeCloseTo(v, 12));
    expect(got[0]).toBeCloseTo(-1.0690449676, 9);
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

  it("a constant group has zero advantages even when std-normalised", () => {
    expect(groupAdvantages([2, 2, 2], { baseline: "mean", normalizeStd: true, eps: 1e-6 })).toEqual([
      0, 0, 0,
    ]);
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

  it("mean and std helpers", () => {
    expect(mean([1, 2, 3])).toBe(2);
    expect(std([1, 3])).toBe(1);
    expect(() => mean([])).toThrow();
  });
});
