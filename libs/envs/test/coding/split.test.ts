/** Train/test splits by a hash of the problem's own text: u = sha256(salt, key)[0:32 bits] / 2^32. */
import { stableHash } from "@troupe/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hashUnit, problemHash, splitByHash } from "../../src/coding/split.ts";

describe("problemHash", () => {
  it("ignores case and how whitespace is laid out, nothing else", () => {
    expect(problemHash("def f(x):\n    return x")).toBe(problemHash("  DEF   f(x):\treturn X \n"));
    expect(problemHash("def f(x): return x")).toBe(stableHash("def f(x): return x"));
    expect(problemHash("def f(x): return x")).not.toBe(problemHash("def f(y): return y"));
  });
});

describe("hashUnit", () => {
  it("is the first 32 bits of the salted hash over 2^32: in [0, 1), fixed by key and salt", () => {
    const u = hashUnit("k", "salt");
    expect(u).toBe(Number.parseInt(stableHash({ salt: "salt", key: "k" }).slice(0, 8), 16) / 2 ** 32);
    expect(hashUnit("k", "salt")).toBe(u);
    expect(hashUnit("k", "other salt")).not.toBe(u);
    fc.assert(
      fc.property(fc.string(), fc.string(), (key, salt) => {
        const v = hashUnit(key, salt);
        expect(v).toBeGreaterThanOrEqual(0);
        expect(v).toBeLessThan(1);
      }),
    );
  });
});

describe("splitByHash", () => {
  const items = Array.from({ length: 2000 }, (_, i) => `problem number ${i}`);

  it("test when u < testFraction: none at 0, all at 1, about the fraction between", () => {
    expect(splitByHash(items, (x) => x, 0, "s").test).toEqual([]);
    expect(splitByHash(items, (x) => x, 1, "s").train).toEqual([]);
    const { train, test } = splitByHash(items, (x) => x, 0.25, "s");
    expect(train.length + test.length).toBe(2000);
    expect(test.length / 2000).toBeGreaterThan(0.2); // binomial(2000, 0.25): σ ≈ 0.0097
    expect(test.length / 2000).toBeLessThan(0.3);
    for (const x of test) expect(hashUnit(problemHash(x), "s")).toBeLessThan(0.25);
    for (const x of train) expect(hashUnit(problemHash(x), "s")).toBeGreaterThanOrEqual(0.25);
  });

  it("an item's split does not depend on the others, their order, or a copy of it", () => {
    const split = splitByHash(items, (x) => x, 0.3, "s");
    const reversed = splitByHash([...items].reverse(), (x) => x, 0.3, "s");
    expect(new Set(reversed.test)).toEqual(new Set(split.test));
    const withCopies = splitByHash([...items.slice(0, 100), ...items.slice(0, 100)], (x) => x, 0.3, "s");
    expect(withCopies.test.length % 2).toBe(0);
    for (const x of withCopies.test) expect(split.test).toContain(x);
  });

  it("refuses a fraction outside [0, 1]", () => {
    for (const bad of [-0.1, 1.5, Number.NaN])
      expect(() => splitByHash(items, (x) => x, bad, "s")).toThrow(
        `testFraction must be in [0, 1], got ${bad}`,
      );
  });
});
