import { describe, expect, it } from "vitest";
import { canonicalJson, deepFreeze, sha256Hex, stableHash } from "../src/hash.ts";

describe("canonical hashing and freezing", () => {
  it("canonicalJson sorts keys at every level", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 0, y: 1 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":1,"z":0}]},"b":1}',
    );
    expect(stableHash({ x: 1, y: 2 })).toBe(stableHash({ y: 2, x: 1 }));
  });

  it("sha256 matches the FIPS 180-2 test vector", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("refuses values JSON cannot carry", () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(/non-finite number at \$\.a/);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/function at \$\.f/);
  });

  it("deepFreeze makes nested mutation throw", () => {
    const state = deepFreeze({ grid: [[0, 1]], meta: { n: 1 } });
    expect(() => {
      (state.grid[0] as number[])[0] = 5;
    }).toThrow(TypeError);
    expect(() => {
      (state.meta as { n: number }).n = 2;
    }).toThrow(TypeError);
  });
});
