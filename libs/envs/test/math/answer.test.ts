import { describe, expect, it } from "vitest";
import { answersMatch, extractAnswer, lastBoxed, parseNumber } from "../../src/math/index.ts";

describe("answer extraction", () => {
  it("prefers the last boxed answer, then ####, then the last number", () => {
    expect(extractAnswer("So 2+2=4, and \\boxed{5} hmm, finally \\boxed{\\frac{3}{4}}.")).toEqual({
      raw: "\\frac{3}{4}",
      value: 0.75,
      source: "boxed",
    });
    expect(extractAnswer("She makes 9 * 2 = $18.\n#### 18")).toEqual({
      raw: "18",
      value: 18,
      source: "hashes",
    });
    expect(extractAnswer("First 3 apples, then 12 more: 15 apples total.")).toEqual({
      raw: "15",
      value: 15,
      source: "last-number",
    });
    expect(extractAnswer("no numbers here")).toBeNull();
    expect(lastBoxed("\\boxed{unclosed")).toBeNull();
  });

  it.each([
    ["1,234", 1234],
    ["$1,234,567.50", 1234567.5],
    ["\\$18", 18],
    ["50%", 50],
    ["50\\%", 50],
    ["3/4", 0.75],
    ["\\dfrac{7}{2}", 3.5],
    ["1 1/2", 1.5],
    ["-1 1/2", -1.5],
    ["18.0", 18],
    ["18.", 18],
    ["12 dollars", 12],
    ["\\text{12 cm}", 12],
    ["−7", -7],
    [".5", 0.5],
    ["1\\,000", 1000],
  ])("parses %s as %d", (raw, value) => {
    expect(parseNumber(raw)).toBe(value);
  });

  it.each(["", "seven", "3, 4", "1/0", "x+1="])("rejects %j", (raw) => {
    expect(parseNumber(raw)).toBeNull();
  });

  it("compares with a relative tolerance", () => {
    expect(answersMatch(18, 18.0000000001)).toBe(true);
    expect(answersMatch(0.75, 3 / 4)).toBe(true);
    expect(answersMatch(18, 18.01)).toBe(false);
    expect(answersMatch(null, 18)).toBe(false);
  });
});
