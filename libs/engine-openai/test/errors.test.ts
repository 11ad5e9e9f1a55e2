import { describe, expect, it } from "vitest";
import { errorBodyMessage, OpenAIRequestError, ResponseFormatError } from "../src/errors.ts";

describe("error messages", () => {
  it("errorBodyMessage reads the OpenAI error shapes, else the raw body", () => {
    expect(errorBodyMessage('{"error": {"message": "model not found", "type": "x"}}')).toBe(
      "model not found",
    );
    expect(errorBodyMessage('{"error": "rate limited"}')).toBe("rate limited");
    expect(errorBodyMessage('{"message": "overloaded"}')).toBe("overloaded");
    expect(errorBodyMessage('{"detail": "x"}')).toBe('{"detail": "x"}');
    expect(errorBodyMessage("<html>bad gateway</html>")).toBe("<html>bad gateway</html>");
  });

  it("errorBodyMessage cuts a long raw body", () => {
    expect(errorBodyMessage("x".repeat(10), 4)).toBe("xxxx…");
    expect(errorBodyMessage("x".repeat(600))).toBe(`${"x".repeat(500)}…`);
  });

  it("a request error says the URL and what failed, and how many attempts it took", () => {
    const once = new OpenAIRequestError("timeout", "http://h/v1/completions", 1, "no answer within 5 ms");
    expect(once.message).toBe("POST http://h/v1/completions: no answer within 5 ms");
    const retried = new OpenAIRequestError(
      "status",
      "http://h/v1/completions",
      3,
      "HTTP 503: busy",
      503,
      "busy",
    );
    expect(retried.message).toBe("POST http://h/v1/completions: HTTP 503: busy (gave up after 3 attempts)");
    expect([retried.name, retried.failure, retried.status, retried.body, retried.attempts]).toEqual([
      "OpenAIRequestError",
      "status",
      503,
      "busy",
      3,
    ]);
  });

  it("a format error names the field", () => {
    const error = new ResponseFormatError("http://h/v1/completions", "choices[0].text", "expected string");
    expect(error.message).toBe(
      "POST http://h/v1/completions: malformed response: choices[0].text: expected string",
    );
    expect(error.field).toBe("choices[0].text");
  });
});
