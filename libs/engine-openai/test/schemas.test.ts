import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ResponseFormatError } from "../src/errors.ts";
import { fieldPath, parseResponse } from "../src/schemas.ts";

describe("response validation", () => {
  it("writes zod paths as a.b[2].c", () => {
    expect(fieldPath(["choices", 0, "logprobs", "token_logprobs", 3])).toBe(
      "choices[0].logprobs.token_logprobs[3]",
    );
    expect(fieldPath([])).toBe("(root)");
  });

  it("names the offending field", () => {
    const schema = z.object({ choices: z.array(z.object({ text: z.string() })) });
    const attempt = () =>
      parseResponse(schema, JSON.stringify({ choices: [{ text: "a" }, { text: 3 }] }), "http://x/v1");
    expect(attempt).toThrow(ResponseFormatError);
    expect(attempt).toThrow(/malformed response: choices\[1\]\.text: /);
    expect(() => parseResponse(schema, "<html>", "http://x/v1")).toThrow(/\(body\): not JSON/);
  });
});
