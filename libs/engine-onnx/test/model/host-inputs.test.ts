import { describe, expect, it } from "vitest";
import { attentionBias, MASKED_BIAS, ropeTables } from "../../src/model/host-inputs.ts";

describe("host-computed graph inputs", () => {
  it("RoPE tables: angle = position · θ^(−2j/D), duplicated over both halves", () => {
    // D = 4, θ = 100: inverse frequencies 1 and 0.1.
    const { cos, sin } = ropeTables(Int32Array.of(0, 2), 4, 100, "float64");
    expect(cos).toBeInstanceOf(Float64Array);
    expect(Array.from(cos)).toEqual([1, 1, 1, 1, Math.cos(2), Math.cos(0.2), Math.cos(2), Math.cos(0.2)]);
    expect(Array.from(sin)).toEqual([0, 0, 0, 0, Math.sin(2), Math.sin(0.2), Math.sin(2), Math.sin(0.2)]);
    const f32 = ropeTables(Int32Array.of(2), 4, 100, "float32");
    expect(f32.cos).toBeInstanceOf(Float32Array);
    expect(f32.cos[0]).toBe(Math.fround(Math.cos(2)));
  });

  it("RoPE rows computed once per position: the same numbers as the formula, before and after the table grows", () => {
    // θ = 10000, D = 8 (an unusual pair, so this test's table starts empty); positions past the
    // first table's 64 rows make it grow, and rows asked for again are copies of the same numbers.
    const D = 8;
    const formula = (pos: number) => {
      const half = Array.from({ length: D / 2 }, (_, j) => pos * (1 / 10_000 ** ((2 * j) / D)));
      return { cos: [...half, ...half].map(Math.cos), sin: [...half, ...half].map(Math.sin) };
    };
    for (const positions of [
      [0, 5, 63],
      [200, 3, 64, 1000],
      [5, 1000, 0],
    ]) {
      const { cos, sin } = ropeTables(Int32Array.from(positions), D, 10_000, "float64");
      positions.forEach((pos, i) => {
        expect(Array.from(cos.subarray(i * D, (i + 1) * D))).toEqual(formula(pos).cos);
        expect(Array.from(sin.subarray(i * D, (i + 1) * D))).toEqual(formula(pos).sin);
      });
      const f32 = ropeTables(Int32Array.from(positions), D, 10_000, "float32");
      expect(Array.from(f32.cos)).toEqual(Array.from(cos, Math.fround));
    }
    expect(() => ropeTables(Int32Array.of(1, -1), D, 10_000, "float64")).toThrow(
      "ropeTables: position -1 at index 1 is negative",
    );
  });

  it("attention bias: causal, and padded keys masked", () => {
    const M = MASKED_BIAS;
    // one row, no cache, 3 tokens, the first is left padding
    expect(Array.from(attentionBias(Uint8Array.of(0, 1, 1), 1, 0, 3, "float64"))).toEqual([
      M,
      M,
      M, // query 0 (padding) sees nothing real
      M,
      0,
      M,
      M,
      0,
      0,
    ]);
  });

  it("attention bias after a cache: query column P + t sees keys up to P + t", () => {
    const M = MASKED_BIAS;
    // two rows, 2 cached + 1 new token; row 1's first cached key is padding
    const bias = attentionBias(Uint8Array.of(1, 1, 1, 0, 1, 1), 2, 2, 1, "float32");
    expect(bias).toBeInstanceOf(Float32Array);
    expect(Array.from(bias)).toEqual([0, 0, 0, Math.fround(M), 0, 0]);
  });

  it("refuses a key mask of the wrong size", () => {
    expect(() => attentionBias(new Uint8Array(5), 2, 2, 1, "float32")).toThrow(
      "attentionBias: keyValid has 5 entries",
    );
  });

  it("a masked entry is large and finite", () => {
    expect(Number.isFinite(MASKED_BIAS) && MASKED_BIAS <= -1e9).toBe(true);
  });
});
