import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseOptions } from "../../src/games/options.ts";

describe("parseOptions", () => {
  const schema = z.object({ size: z.number().int().max(9), inner: z.object({ n: z.number() }).optional() });

  it("the parsed value, or the first issue as `<what>: <path>: <message>`", () => {
    expect(parseOptions("x options", schema, { size: 3 })).toEqual({ size: 3 });
    expect(() => parseOptions("x options", schema, { size: 10 })).toThrow(/^x options: size: /);
    expect(() => parseOptions("x options", schema, { size: 1, inner: { n: "1" } })).toThrow(
      /^x options: inner\.n: /,
    );
    expect(() => parseOptions("x options", schema, 5)).toThrow(/^x options: \(root\): /);
  });
});
