import { describe, expect, it } from "vitest";
import { parseConfig } from "../src/config.ts";
import { createOpenAIEngine } from "../src/engine.ts";

describe("config", () => {
  it("names the bad field", () => {
    expect(() => createOpenAIEngine({ baseUrl: "not a url", models: { a: { model: "m" } } })).toThrow(
      /baseUrl: /,
    );
    expect(() => createOpenAIEngine({ baseUrl: "http://x", models: {} })).toThrow(
      /models: must name at least one policy/,
    );
    expect(() =>
      createOpenAIEngine({ baseUrl: "http://x", models: { a: { model: "m", tokenizer: {} as never } } }),
    ).toThrow(/models\.a\.tokenizer: must be a Tokenizer/);
  });

  it("fills every default, and drops a trailing / or /v1 from the base URL", () => {
    const config = parseConfig({ baseUrl: "http://127.0.0.1:8000/v1/", models: { a: { model: "m" } } });
    expect(config).toEqual({
      baseUrl: "http://127.0.0.1:8000",
      models: { a: { model: "m" } },
      concurrency: 16,
      timeoutMs: 120_000,
      retries: 4,
      backoff: { initialDelayMs: 250, multiplier: 2, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 },
      dialect: "vllm",
      promptFormat: "token-ids",
      requireTokenIds: true,
    });
    expect(parseConfig({ baseUrl: "https://api.example.com/", models: { a: { model: "m" } } }).baseUrl).toBe(
      "https://api.example.com",
    );
  });

  it("lists every bad field, one line each", () => {
    expect(() =>
      parseConfig({
        baseUrl: "http://x",
        models: { a: { model: "" } },
        concurrency: 0,
        dialect: "tgi" as never,
      }),
    ).toThrow(
      /^createOpenAIEngine: invalid config:\n {2}models\.a\.model: .*\n {2}concurrency: .*\n {2}dialect: .*$/,
    );
  });
});
