/**
 * The HTTP client alone against a real server on 127.0.0.1 (stub-server.ts): what it sends, which
 * failures it retries and how long it waits, its per-attempt timeout, its concurrency limit, and
 * close() / a caller's signal ending a request.
 */
import { afterEach, describe, expect, it } from "vitest";
import { OpenAIRequestError } from "../src/errors.ts";
import { HttpClient, type HttpClientOptions } from "../src/http.ts";
import { BackoffConfigSchema } from "../src/retry.ts";
import { retryableFaults, StubOpenAIServer } from "./stub-server.ts";

let stub: StubOpenAIServer;
let client: HttpClient;

/** A fault-free answer of the stub: the completion for seed 7, one token. */
const BODY = { model: "base", prompt: [1, 2], max_tokens: 1, seed: 7, logprobs: 1 };

async function setup(options: Partial<HttpClientOptions> = {}, retries = 3): Promise<void> {
  stub = await StubOpenAIServer.start();
  client = new HttpClient({
    baseUrl: stub.url,
    concurrency: 4,
    timeoutMs: 2000,
    backoff: BackoffConfigSchema.parse({ retries, initialDelayMs: 1, maxDelayMs: 4 }),
    fetch: (input, init) => fetch(input, init),
    random: () => 0.5,
    ...options,
  });
}

afterEach(async () => {
  client?.close();
  await stub?.close();
});

const failure = (work: Promise<unknown>) =>
  work.then(
    () => {
      throw new Error("expected a failure");
    },
    (e: unknown) => e as OpenAIRequestError,
  );

describe("HttpClient", () => {
  it("POSTs the body as JSON to baseUrl + path, with the API key as a bearer token", async () => {
    await setup({ apiKey: "k" });
    const result = await client.post("/v1/completions", BODY);
    expect([result.status, result.attempts]).toEqual([200, 1]);
    expect(JSON.parse(result.text).choices).toHaveLength(1);
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect([
      request!.path,
      request!.body,
      request!.headers.authorization,
      request!.headers["content-type"],
    ]).toEqual(["/v1/completions", BODY, "Bearer k", "application/json"]);
  });

  it("retries 5xx, 429 and a dropped connection with the same body, counting attempts", async () => {
    await setup();
    stub.schedule(...retryableFaults(502));
    const result = await client.post("/v1/completions", BODY);
    expect([result.status, result.attempts]).toEqual([200, 4]);
    expect(stub.requests.map((r) => JSON.stringify(r.body))).toEqual(Array(4).fill(JSON.stringify(BODY)));
  });

  it("fails at once on another 4xx, with the server's message, status and body", async () => {
    await setup();
    stub.schedule({ kind: "status", status: 422, message: "prompt too long" });
    const error = await failure(client.post("/v1/completions", BODY));
    expect(error).toBeInstanceOf(OpenAIRequestError);
    expect(error.message).toBe(`POST ${stub.url}/v1/completions: HTTP 422: prompt too long`);
    expect([error.failure, error.status, error.attempts]).toEqual(["status", 422, 1]);
    expect(JSON.parse(error.body!).error.message).toBe("prompt too long");
    expect(stub.requests).toHaveLength(1);
  });

  it("gives up after the retries with the last failure: a network error names its cause", async () => {
    await setup({}, 1);
    stub.schedule({ kind: "status", status: 500 }, { kind: "drop" });
    const error = await failure(client.post("/v1/completions", BODY));
    expect(error.failure).toBe("network");
    expect(error.message).toMatch(/: network error: .+ \(gave up after 2 attempts\)$/);
    expect(stub.requests).toHaveLength(2);
  });

  it("honours Retry-After, capped by maxRetryAfterMs", async () => {
    await setup();
    stub.schedule({ kind: "status", status: 429, retryAfter: "0.3" });
    await client.post("/v1/completions", BODY);
    expect(stub.requests[1]!.start - stub.requests[0]!.start).toBeGreaterThanOrEqual(290);
    await stub.close();
    // a server asking for an hour is waited for maxRetryAfterMs only
    stub = await StubOpenAIServer.start();
    client = new HttpClient({
      baseUrl: stub.url,
      concurrency: 1,
      timeoutMs: 2000,
      backoff: BackoffConfigSchema.parse({ maxRetryAfterMs: 50 }),
      fetch: (input, init) => fetch(input, init),
      random: () => 0.5,
    });
    stub.schedule({ kind: "status", status: 503, retryAfter: "3600" });
    const t0 = performance.now();
    expect((await client.post("/v1/completions", BODY)).attempts).toBe(2);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it("times out a slow attempt, retries it, and reports a timeout when no retry is left", async () => {
    await setup({ timeoutMs: 100 }, 1);
    stub.schedule({ kind: "delay", ms: 10_000 });
    expect((await client.post("/v1/completions", BODY)).attempts).toBe(2);
    stub.schedule({ kind: "delay", ms: 10_000 }, { kind: "delay", ms: 10_000 });
    const error = await failure(client.post("/v1/completions", BODY));
    expect([error.failure, error.attempts]).toEqual(["timeout", 2]);
    expect(error.message).toMatch(/no answer within 100 ms \(gave up after 2 attempts\)$/);
  });

  it("never has more attempts in flight than the concurrency limit", async () => {
    stub = await StubOpenAIServer.start({ latencyMs: 20 });
    client = new HttpClient({
      baseUrl: stub.url,
      concurrency: 2,
      timeoutMs: 2000,
      backoff: BackoffConfigSchema.parse({ initialDelayMs: 1, maxDelayMs: 2 }),
      fetch: (input, init) => fetch(input, init),
      random: () => 0.5,
    });
    stub.schedule({ kind: "status", status: 500 }, { kind: "drop" });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, seed) => client.post("/v1/completions", { ...BODY, seed })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(stub.maxInFlight).toBe(2);
    expect(stub.requests).toHaveLength(12);
  });

  it("close() ends the requests in flight and refuses new ones", async () => {
    await setup();
    stub.schedule({ kind: "delay", ms: 10_000 });
    const pending = failure(client.post("/v1/completions", BODY));
    await new Promise((r) => setTimeout(r, 50));
    client.close();
    const error = await pending;
    expect([error.failure, error.message]).toEqual([
      "closed",
      `POST ${stub.url}/v1/completions: the engine was closed`,
    ]);
    expect(client.closed).toBe(true);
    expect((await failure(client.post("/v1/completions", BODY))).failure).toBe("closed");
  });

  it("a caller's signal cancels its request, even during a backoff wait", async () => {
    await setup({}, 3);
    stub.schedule({ kind: "status", status: 429, retryAfter: "60" });
    const controller = new AbortController();
    const pending = failure(client.post("/v1/completions", BODY, controller.signal));
    await new Promise((r) => setTimeout(r, 50));
    controller.abort("no longer needed");
    const error = await pending;
    expect([error.failure, error.message]).toEqual([
      "closed",
      `POST ${stub.url}/v1/completions: cancelled: no longer needed`,
    ]);
    expect(stub.requests).toHaveLength(1);
  });
});
