import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { samplingParams } from "@troupe/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  BackoffConfigSchema,
  backoffDelayMs,
  completionsBody,
  echoScoringBody,
  fieldPath,
  isRetryableStatus,
  PolicyGate,
  parseResponse,
  parseRetryAfterMs,
  parseTokenIdTokens,
  ResponseFormatError,
  samplingFields,
} from "../src/index.ts";

describe("retry policy", () => {
  const backoff = BackoffConfigSchema.parse({ initialDelayMs: 100, multiplier: 2, maxDelayMs: 1000 });

  it("retries 429 and 5xx only", () => {
    expect([429, 500, 502, 503, 504, 599].map(isRetryableStatus)).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([200, 400, 401, 403, 404, 408, 409, 422].map(isRetryableStatus)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it("waits between cap/2 and cap, the cap doubling up to maxDelayMs", () => {
    // caps: 100, 200, 400, 800, 1000, 1000
    expect([0, 1, 2, 3, 4, 5].map((r) => backoffDelayMs(r, backoff, () => 0))).toEqual([
      50, 100, 200, 400, 500, 500,
    ]);
    expect([0, 1, 2, 3, 4, 5].map((r) => backoffDelayMs(r, backoff, () => 1))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(backoffDelayMs(2, backoff, () => 0.25)).toBe(250);
  });

  it("property: the wait lies in [cap/2, cap] and its lower bound never shrinks", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 30 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retry, u) => {
          const cap = Math.min(1000, 100 * 2 ** retry);
          const wait = backoffDelayMs(retry, backoff, () => u);
          expect(wait).toBeGreaterThanOrEqual(cap / 2);
          expect(wait).toBeLessThanOrEqual(cap);
          expect(backoffDelayMs(retry + 1, backoff, () => 0)).toBeGreaterThanOrEqual(
            backoffDelayMs(retry, backoff, () => 0),
          );
        },
      ),
    );
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");
    expect(parseRetryAfterMs("2", now)).toBe(2000);
    expect(parseRetryAfterMs("0.5", now)).toBe(500);
    expect(parseRetryAfterMs("Wed, 21 Oct 2015 07:28:03 GMT", now)).toBe(3000);
    expect(parseRetryAfterMs("Wed, 21 Oct 2015 07:27:00 GMT", now)).toBe(0);
    expect(parseRetryAfterMs(null, now)).toBeUndefined();
    expect(parseRetryAfterMs("soon", now)).toBeUndefined();
  });
});

describe("token ids", () => {
  it("parses token_id:N tokens, all or nothing", () => {
    expect(parseTokenIdTokens(["token_id:0", "token_id:151645", "token_id:42"])).toEqual([0, 151645, 42]);
    expect(parseTokenIdTokens([])).toEqual([]);
    expect(parseTokenIdTokens(["token_id:1", "hello"])).toBeUndefined();
    expect(parseTokenIdTokens(["token_id:-1"])).toBeUndefined();
    expect(parseTokenIdTokens(["token_id:1 "])).toBeUndefined();
  });
});

describe("request bodies", () => {
  const sampling = samplingParams({
    temperature: 0.7,
    topP: 0.9,
    topK: 20,
    maxTokens: 64,
    stop: ["\n\n"],
    stopTokenIds: [258],
  });

  it("maps sampling params to vLLM fields", () => {
    expect(samplingFields(sampling, 123, "vllm")).toEqual({
      temperature: 0.7,
      top_p: 0.9,
      top_k: 20,
      min_p: 0,
      repetition_penalty: 1,
      max_tokens: 64,
      stop: ["\n\n"],
      stop_token_ids: [258],
      seed: 123,
      n: 1,
    });
  });

  it("sends disabled top-k as -1 and omits empty stop lists", () => {
    expect(samplingFields(samplingParams({}), 5, "vllm")).toEqual({
      temperature: 1,
      top_p: 1,
      top_k: -1,
      min_p: 0,
      repetition_penalty: 1,
      max_tokens: 256,
      seed: 5,
      n: 1,
    });
  });

  it("refuses top-k and stop token ids in the openai dialect instead of dropping them", () => {
    expect(() => samplingFields(sampling, 1, "openai")).toThrow(
      /sampling.topK = 20: the OpenAI API has no top_k/,
    );
    expect(() => samplingFields(samplingParams({ stopTokenIds: [7] }), 1, "openai")).toThrow(
      /sampling.stopTokenIds = \[7\]/,
    );
    expect(samplingFields(samplingParams({ stop: ["x"] }), 1, "openai")).toEqual({
      temperature: 1,
      top_p: 1,
      max_tokens: 256,
      stop: ["x"],
      seed: 1,
      n: 1,
    });
  });

  it("builds completions and echo bodies; extraBody overrides", () => {
    expect(
      completionsBody("m", [1, 2], samplingParams({ maxTokens: 3 }), 9, "vllm", { min_p: 0.1, n: 1 }),
    ).toEqual({
      model: "m",
      prompt: [1, 2],
      temperature: 1,
      top_p: 1,
      top_k: -1,
      repetition_penalty: 1,
      max_tokens: 3,
      seed: 9,
      n: 1,
      logprobs: 1,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
      min_p: 0.1,
    });
    expect(echoScoringBody("m", [4, 5, 6], "vllm")).toEqual({
      model: "m",
      prompt: [4, 5, 6],
      echo: true,
      max_tokens: 1,
      temperature: 1,
      logprobs: 1,
      return_tokens_as_token_ids: true,
    });
  });
});

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

describe("policy gate", () => {
  it("a reload waits for requests in flight and holds new ones; other policies pass", async () => {
    const gate = new PolicyGate();
    const log: string[] = [];
    const tick = () => new Promise((r) => setTimeout(r, 5));
    const req = (id: string, name: string) =>
      gate.shared(id, async () => {
        log.push(`${name}+`);
        await tick();
        log.push(`${name}-`);
      });
    const first = req("a", "r1");
    const reload = gate.exclusive("a", async () => {
      log.push("reload+");
      await tick();
      log.push("reload-");
    });
    const second = req("a", "r2");
    const other = req("b", "b1");
    await Promise.all([first, reload, second, other]);
    expect(log.indexOf("reload+")).toBeGreaterThan(log.indexOf("r1-"));
    expect(log.indexOf("r2+")).toBeGreaterThan(log.indexOf("reload-"));
    expect(log.indexOf("b1+")).toBeLessThan(log.indexOf("reload+"));
  });
});

describe("portability", () => {
  it("src imports nothing from node: (runs in Cloudflare Workers)", () => {
    const dir = join(import.meta.dirname, "../src");
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), "utf8");
      expect(text, file).not.toMatch(/from "node:/);
      expect(text, file).not.toMatch(/\bprocess\.|\bBuffer\b|require\(/);
    }
  });
});
