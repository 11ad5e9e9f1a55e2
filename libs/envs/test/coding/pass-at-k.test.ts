import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { averageTestPassRate, meanPassAtK, passAtK } from "../../src/coding/index.ts";

/** Direct formula with exact binomials, for small n. */
function binom(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

describe("pass@k", () => {
  it("matches hand-computed values", () => {
    expect(passAtK(5, 2, 1)).toBeCloseTo(0.4, 15);
    expect(passAtK(10, 3, 5)).toBeCloseTo(1 - 21 / 252, 15);
    expect(passAtK(10, 0, 5)).toBe(0);
    expect(passAtK(10, 6, 5)).toBe(1); // n - c = 4 < k: every draw of 5 holds a correct one
    expect(passAtK(1, 1, 1)).toBe(1);
  });

  it("equals 1 − C(n−c,k)/C(n,k) and is monotone in c and k", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.nat(), fc.nat(), (n, cr, kr) => {
        const c = cr % (n + 1);
        const k = 1 + (kr % n);
        const direct = n - c < k ? 1 : 1 - binom(n - c, k) / binom(n, k);
        expect(passAtK(n, c, k)).toBeCloseTo(direct, 10);
        if (c < n) expect(passAtK(n, c + 1, k)).toBeGreaterThanOrEqual(passAtK(n, c, k) - 1e-12);
        if (k < n) expect(passAtK(n, c, k + 1)).toBeGreaterThanOrEqual(passAtK(n, c, k) - 1e-12);
      }),
    );
  });

  it("is stable for large n", () => {
    // C(1000, 100) overflows nothing here; value from the product form by hand: c = 0 → 0, c = n → 1.
    expect(passAtK(1000, 0, 100)).toBe(0);
    expect(passAtK(1000, 1, 100)).toBeCloseTo(0.1, 12); // 1 − (1 − 100/1000)
    expect(Number.isFinite(passAtK(200000, 3, 100000))).toBe(true);
  });

  it("rejects bad arguments by name", () => {
    expect(() => passAtK(5, 6, 1)).toThrow(/c must be/);
    expect(() => passAtK(5, 1, 0)).toThrow(/k must be/);
    expect(() => passAtK(0, 0, 1)).toThrow(/n must be/);
  });

  it("averages over problems and samples", () => {
    expect(
      meanPassAtK(
        [
          { n: 5, correct: 2 },
          { n: 5, correct: 0 },
        ],
        1,
      ),
    ).toBeCloseTo(0.2, 15);
    expect(
      averageTestPassRate([
        { passed: 1, total: 4 },
        { passed: 3, total: 3 },
        { passed: 0, total: 0 },
      ]),
    ).toBeCloseTo((0.25 + 1 + 0) / 3, 15);
  });
});
