/**
 * The engine against a real HTTP server that answers like vLLM (stub-server.ts): request bodies,
 * answers parsed into Completions, retries, the concurrency limit, timeouts, malformed answers,
 * scoring and adapter reloads.
 */
import { samplingParams, userObservation } from "@troupe/core";
import { ByteTokenizer } from "@troupe/engine";
import { afterEach, describe, expect, it } from "vitest";
import {
  createOpenAIEngine,
  type OpenAIEngine,
  type OpenAIEngineConfigInput,
  OpenAIRequestError,
  ResponseFormatError,
  UnsupportedOperationError,
} from "../src/index.ts";
import {
  chainLogprobs,
  IM_END_ID,
  retryableFaults,
  StubOpenAIServer,
  type StubOptions,
  stubReply,
} from "./stub-server.ts";

const tokenizer = new ByteTokenizer();
const observation = userObservation("2+2?", "Be brief.");
const PROMPT_IDS = tokenizer.encodeChat(observation.messages);
/**
 * The stub's answer for seed 7: "s7" = bytes 115, 55, then <|im_end|> 258. Log-probs
 * −(((31·prev + t) mod 97) + 1)/100 with prev = 10 ("\n" ending the generation prompt):
 * (310+115) mod 97 = 37 → −0.38; (3565+55) mod 97 = 31 → −0.32; (1705+258) mod 97 = 23 → −0.24.
 */
const SEED_7_COMPLETION = {
  text: "s7",
  promptTokenIds: PROMPT_IDS,
  tokenIds: [115, 55, IM_END_ID],
  logprobs: [-0.38, -0.32, -0.24],
  finishReason: "stop",
};

let stub: StubOpenAIServer;
let engine: OpenAIEngine;

async function setup(
  stubOptions: StubOptions = {},
  overrides: Partial<OpenAIEngineConfigInput> = {},
): Promise<{ stub: StubOpenAIServer; engine: OpenAIEngine }> {
  stub = await StubOpenAIServer.start({
    adapters: { "writer-lora": "/adapters/writer/v0", "critic-lora": "/adapters/critic/v0" },
    ...stubOptions,
  });
  engine = createOpenAIEngine({
    baseUrl: `${stub.url}/v1`,
    models: {
      writer: { model: "writer-lora", tokenizer },
      critic: { model: "critic-lora", tokenizer },
    },
    concurrency: 4,
    timeoutMs: 2000,
    retries: 3,
    backoff: { initialDelayMs: 1, maxDelayMs: 4 },
    random: () => 0.5,
    ...overrides,
  });
  return { stub, engine };
}

afterEach(async () => {
  await engine?.close();
  await stub?.close();
});

const completions = (s: StubOpenAIServer) => s.requests.filter((r) => r.path === "/v1/completions");

describe("generate through /v1/completions (policy with a tokenizer)", () => {
  it("sends each policy's model, the prompt as token ids, the sampling fields and the seed", async () => {
    await setup();
    const sampling = samplingParams({ temperature: 0.8, topP: 0.95, topK: 40, maxTokens: 16, stop: ["END"] });
    await engine.generate(
      [
        { policyId: "writer", observation, seed: 7 },
        { policyId: "critic", observation, seed: 8 },
      ],
      sampling,
    );
    const bodies = completions(stub)
      .map((r) => r.body)
      .sort((a, b) => a.seed - b.seed);
    expect(bodies).toEqual([
      {
        model: "writer-lora",
        prompt: PROMPT_IDS,
        temperature: 0.8,
        top_p: 0.95,
        top_k: 40,
        min_p: 0,
        repetition_penalty: 1,
        max_tokens: 16,
        stop: ["END"],
        seed: 7,
        n: 1,
        logprobs: 1,
        return_tokens_as_token_ids: true,
        return_token_ids: true,
      },
      expect.objectContaining({ model: "critic-lora", seed: 8, prompt: PROMPT_IDS }),
    ]);
  });

  it("returns ids parsed from token_id:N, the log-probs and the finish reason", async () => {
    await setup();
    const [done, cut] = await engine.generate(
      [
        { policyId: "writer", observation, seed: 7 },
        { policyId: "writer", observation, seed: 7 },
      ].map((r, i) => ({ ...r, seed: i === 0 ? 7 : 12345 })),
      samplingParams({ maxTokens: 4 }),
    );
    expect(done).toEqual(SEED_7_COMPLETION);
    // "s12345" cut at 4 tokens.
    expect(cut!.text).toBe("s123");
    expect(cut!.tokenIds).toEqual([115, 49, 50, 51]);
    expect(cut!.finishReason).toBe("length");
    expect(cut!.logprobs).toEqual(chainLogprobs(10, [115, 49, 50, 51]));
  });

  it("prefers the answer's token_ids (vLLM return_token_ids) and counts usage", async () => {
    await setup({ returnTokenIds: true });
    const [c] = await engine.generate([{ policyId: "critic", observation, seed: 3 }], samplingParams({}));
    expect(c!.tokenIds).toEqual(stubReply(3, 256).ids);
    expect(engine.usage()).toEqual({
      total: { requests: 1, failures: 0, attempts: 1, promptTokens: PROMPT_IDS.length, completionTokens: 3 },
      byPolicy: {
        critic: {
          requests: 1,
          failures: 0,
          attempts: 1,
          promptTokens: PROMPT_IDS.length,
          completionTokens: 3,
        },
      },
    });
  });

  it("can send the prompt as text", async () => {
    await setup({}, { promptFormat: "text" });
    const [c] = await engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}));
    expect(completions(stub)[0]!.body.prompt).toBe(tokenizer.renderChat(observation.messages, true));
    expect(c!.promptTokenIds).toEqual(PROMPT_IDS);
    expect(c!.tokenIds).toEqual([115, 55, IM_END_ID]);
  });

  it("sends the API key as a bearer token", async () => {
    await setup({}, { apiKey: "sk-test" });
    await engine.generate([{ policyId: "writer", observation, seed: 1 }], samplingParams({}));
    expect(stub.requests[0]!.headers.authorization).toBe("Bearer sk-test");
  });
});

describe("generate through /v1/chat/completions (no tokenizer)", () => {
  const chatModels = { writer: { model: "writer-lora" } };

  it("sends the messages with logprobs and takes the prompt ids from the answer", async () => {
    await setup({ returnTokenIds: true }, { models: chatModels });
    const [c] = await engine.generate(
      [{ policyId: "writer", observation, seed: 7 }],
      samplingParams({ maxTokens: 8 }),
    );
    expect(stub.requests[0]!.path).toBe("/v1/chat/completions");
    expect(stub.requests[0]!.body).toEqual({
      model: "writer-lora",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "2+2?" },
      ],
      temperature: 1,
      top_p: 1,
      top_k: -1,
      min_p: 0,
      repetition_penalty: 1,
      max_tokens: 8,
      seed: 7,
      n: 1,
      logprobs: true,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
    });
    expect(c).toEqual(SEED_7_COMPLETION);
  });

  it("errors clearly when the server gives no prompt ids, unless ids are not required", async () => {
    await setup({ returnTokenIds: false }, { models: chatModels });
    await expect(
      engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({})),
    ).rejects.toThrow(/no prompt_token_ids for policy "writer".*Give the policy a `tokenizer`/);
    await engine.close();
    engine = createOpenAIEngine({ baseUrl: stub.url, models: chatModels, requireTokenIds: false });
    const [c] = await engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}));
    expect(c).toEqual({
      text: "s7",
      promptTokenIds: [],
      tokenIds: [115, 55, IM_END_ID],
      logprobs: [-0.38, -0.32, -0.24],
      finishReason: "stop",
    });
  });
});

describe("openai dialect", () => {
  it("sends only OpenAI fields; token strings give ids only through the tokenizer", async () => {
    await setup({}, { dialect: "openai" });
    // Cut at 2 tokens ("s1"): the text re-encodes to as many ids as there are log-probs.
    const [c] = await engine.generate(
      [{ policyId: "writer", observation, seed: 12 }],
      samplingParams({ maxTokens: 2 }),
    );
    const body = stub.requests[0]!.body;
    expect(body.return_tokens_as_token_ids).toBeUndefined();
    expect(body.top_k).toBeUndefined();
    expect(body.repetition_penalty).toBeUndefined();
    expect(body.logprobs).toBe(1);
    expect(c!.tokenIds).toEqual([115, 49]);
    // Stopped on <|im_end|>: 3 log-probs but the text "s7" re-encodes to 2 ids → refused.
    await expect(
      engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({})),
    ).rejects.toThrow(/no completion token ids for policy "writer".*gives 2 ids for 3 log-probs/);
    await expect(
      engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({ topK: 5 })),
    ).rejects.toThrow(/no top_k/);
    await expect(
      engine.logprobs("writer", [{ promptTokenIds: [1], completionTokenIds: [2] }]),
    ).rejects.toThrow(/logprobs\(\): not supported by this backend \(dialect "openai"\)/);
  });
});

describe("retries", () => {
  it("retries 500, 429 and a dropped connection, then succeeds with the same request", async () => {
    await setup();
    stub.schedule(...retryableFaults());
    const [c] = await engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}));
    expect(c!.tokenIds).toEqual([115, 55, IM_END_ID]);
    expect(stub.requests).toHaveLength(4);
    expect(new Set(stub.requests.map((r) => JSON.stringify(r.body))).size).toBe(1);
    expect(engine.usage().total).toMatchObject({ requests: 1, attempts: 4, failures: 0 });
  });

  it("waits as long as Retry-After says", async () => {
    await setup();
    stub.schedule({ kind: "status", status: 429, retryAfter: "0.3" });
    const t0 = performance.now();
    await engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(stub.requests[1]!.start - stub.requests[0]!.start).toBeGreaterThanOrEqual(290);
  });

  it("gives up after the configured retries with the last error", async () => {
    await setup({}, { retries: 2 });
    stub.schedule(
      ...Array.from({ length: 3 }, () => ({ kind: "status" as const, status: 503, message: "overloaded" })),
    );
    const error = await engine
      .generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAIRequestError);
    expect((error as OpenAIRequestError).status).toBe(503);
    expect((error as Error).message).toMatch(/HTTP 503: overloaded \(gave up after 3 attempts\)/);
    expect(stub.requests).toHaveLength(3);
    expect(engine.usage().total).toMatchObject({ requests: 1, attempts: 3, failures: 1 });
  });

  it("never retries other 4xx", async () => {
    await setup();
    for (const status of [400, 401, 404, 422]) {
      stub.requests.length = 0;
      stub.schedule({ kind: "status", status, message: `bad ${status}` });
      const error = await engine
        .generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}))
        .catch((e: unknown) => e);
      expect((error as OpenAIRequestError).status).toBe(status);
      expect((error as Error).message).toContain(`HTTP ${status}: bad ${status}`);
      expect(stub.requests).toHaveLength(1);
    }
  });

  it("a request for a model the server does not serve fails at once with its message", async () => {
    await setup({ adapters: {} });
    await expect(
      engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({})),
    ).rejects.toThrow(/HTTP 404: The model `writer-lora` does not exist/);
    expect(stub.requests).toHaveLength(1);
  });
});

describe("timeouts", () => {
  it("aborts a slow attempt and retries it", async () => {
    await setup({}, { timeoutMs: 150 });
    // the slow answer is far slower than any scheduling hiccup of a loaded machine, so "did not
    // wait for it" is a wide bound, not a race
    stub.schedule({ kind: "delay", ms: 10_000 });
    const t0 = performance.now();
    const [c] = await engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}));
    expect(c!.text).toBe("s7");
    expect(stub.requests).toHaveLength(2);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it("reports a timeout when no retry is left", async () => {
    await setup({}, { timeoutMs: 100, retries: 0 });
    stub.schedule({ kind: "delay", ms: 10_000 });
    const t0 = performance.now();
    const error = await engine
      .generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}))
      .catch((e: unknown) => e);
    expect((error as OpenAIRequestError).failure).toBe("timeout");
    expect((error as Error).message).toMatch(/no answer within 100 ms/);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });
});

describe("concurrency limit", () => {
  it("never has more requests in flight than the limit, retries included", async () => {
    await setup({ latencyMs: 20 }, { concurrency: 3 });
    stub.schedule(...retryableFaults(), { kind: "status", status: 502 });
    const requests = Array.from({ length: 24 }, (_, i) => ({
      policyId: i % 2 === 0 ? "writer" : "critic",
      observation,
      seed: i,
    }));
    const out = await engine.generate(requests, samplingParams({}));
    expect(out.map((c) => c.text)).toEqual(requests.map((r) => `s${r.seed}`));
    expect(stub.maxInFlight).toBe(3);
    expect(stub.requests).toHaveLength(28);
  });
});

describe("malformed answers", () => {
  it("name the field, and are not retried", async () => {
    await setup();
    const good = {
      choices: [
        { text: "a", finish_reason: "stop", logprobs: { tokens: ["token_id:97"], token_logprobs: [-0.1] } },
      ],
    };
    const cases: [unknown, RegExp][] = [
      [
        { choices: [{ ...good.choices[0], logprobs: { tokens: ["token_id:97"] } }] },
        /choices\[0\]\.logprobs\.token_logprobs: /,
      ],
      [{ choices: [{ ...good.choices[0], finish_reason: "abort" }] }, /choices\[0\]\.finish_reason: /],
      [{ choices: [] }, /choices: /],
      [
        { choices: [{ ...good.choices[0], logprobs: { tokens: ["token_id:97"], token_logprobs: ["x"] } }] },
        /choices\[0\]\.logprobs\.token_logprobs\[0\]: /,
      ],
      [
        { choices: [{ ...good.choices[0], logprobs: { tokens: ["a", "b"], token_logprobs: [-0.1] } }] },
        /choices\[0\]\.logprobs\.tokens: has 2 tokens but token_logprobs has 1/,
      ],
    ];
    for (const [json, pattern] of cases) {
      stub.requests.length = 0;
      stub.schedule({ kind: "json", json });
      const error = await engine
        .generate([{ policyId: "writer", observation, seed: 1 }], samplingParams({}))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResponseFormatError);
      expect((error as Error).message).toMatch(pattern);
      expect(stub.requests).toHaveLength(1);
    }
    stub.schedule({ kind: "raw", text: '{"choices": [' });
    await expect(
      engine.generate([{ policyId: "writer", observation, seed: 1 }], samplingParams({})),
    ).rejects.toThrow(/malformed response: \(body\): not JSON/);
  });
});

describe("batches", () => {
  it("a request that fails for good fails the batch with its error", async () => {
    await setup({ latencyMs: 30 }, { concurrency: 2 });
    stub.schedule({ kind: "status", status: 400, message: "prompt too long" });
    const requests = Array.from({ length: 8 }, (_, i) => ({ policyId: "writer", observation, seed: i }));
    await expect(engine.generate(requests, samplingParams({}))).rejects.toThrow(/HTTP 400: prompt too long/);
    // The rest of the batch was cancelled rather than sent: at most the two in flight got through.
    await new Promise((r) => setTimeout(r, 100));
    expect(stub.requests.length).toBeLessThanOrEqual(3);
  });

  it("rejects unknown policies and bad seeds before sending anything", async () => {
    await setup();
    await expect(
      engine.generate([{ policyId: "judge", observation, seed: 1 }], samplingParams({})),
    ).rejects.toThrow(
      /requests\[0\]\.policyId: unknown policy "judge" \(this engine serves: writer, critic\)/,
    );
    await expect(
      engine.generate([{ policyId: "writer", observation, seed: 1.5 }], samplingParams({})),
    ).rejects.toThrow(/requests\[0\]\.seed = 1.5/);
    expect(stub.requests).toHaveLength(0);
  });
});

describe("logprobs (echo scoring)", () => {
  it("scores completions with echo and matches the sampler's log-probs", async () => {
    await setup();
    const [c] = await engine.generate([{ policyId: "writer", observation, seed: 7 }], samplingParams({}));
    stub.requests.length = 0;
    const scored = await engine.logprobs("writer", [
      { promptTokenIds: c!.promptTokenIds, completionTokenIds: c!.tokenIds },
      { promptTokenIds: [1, 2], completionTokenIds: [] },
    ]);
    expect(scored).toEqual([[-0.38, -0.32, -0.24], []]);
    expect(stub.requests).toHaveLength(1);
    expect(stub.requests[0]!.body).toEqual({
      model: "writer-lora",
      prompt: [...PROMPT_IDS, 115, 55, IM_END_ID],
      echo: true,
      max_tokens: 1,
      temperature: 1,
      logprobs: 1,
      return_tokens_as_token_ids: true,
    });
  });

  it("calls a refused echo unsupported, and a short answer too", async () => {
    await setup();
    stub.schedule({ kind: "status", status: 400, message: "echo is not supported" });
    await expect(
      engine.logprobs("writer", [{ promptTokenIds: [1], completionTokenIds: [2] }]),
    ).rejects.toThrow(UnsupportedOperationError);
    stub.schedule({
      kind: "json",
      json: { choices: [{ logprobs: { tokens: ["token_id:9"], token_logprobs: [-1] } }] },
    });
    await expect(
      engine.logprobs("writer", [{ promptTokenIds: [1], completionTokenIds: [2] }]),
    ).rejects.toThrow(/not supported by this backend: .* returned 1 log-probs for a sequence of 2 tokens/);
    stub.schedule({
      kind: "json",
      json: { choices: [{ logprobs: { tokens: ["token_id:1", "token_id:3"], token_logprobs: [null, -1] } }] },
    });
    await expect(
      engine.logprobs("writer", [{ promptTokenIds: [1], completionTokenIds: [2] }]),
    ).rejects.toThrow(/choices\[0\]\.logprobs\.tokens\[1\]: is token_id:3 but the sequence has 2 there/);
  });
});

describe("adapter reload", () => {
  it("loads in place by default", async () => {
    await setup();
    await engine.reloadAdapter("writer", "/adapters/writer/v1");
    expect(stub.requests.map((r) => [r.path, r.body])).toEqual([
      [
        "/v1/load_lora_adapter",
        { lora_name: "writer-lora", lora_path: "/adapters/writer/v1", load_inplace: true },
      ],
    ]);
    expect(stub.adapters.get("writer-lora")).toBe("/adapters/writer/v1");
  });

  it("unloads then loads, tolerating an adapter that is not loaded", async () => {
    await setup({ adapters: { "critic-lora": "/c" } });
    await engine.reloadAdapter("writer", "/adapters/writer/v1", { inPlace: false });
    await engine.reloadAdapter("writer", "/adapters/writer/v2", { inPlace: false });
    expect(stub.requests.map((r) => r.path)).toEqual([
      "/v1/unload_lora_adapter",
      "/v1/load_lora_adapter",
      "/v1/unload_lora_adapter",
      "/v1/load_lora_adapter",
    ]);
    expect(stub.requests[0]!.body).toEqual({ lora_name: "writer-lora" });
    expect(stub.adapters.get("writer-lora")).toBe("/adapters/writer/v2");
  });

  it("says how to enable runtime LoRA updates when the endpoint is missing", async () => {
    await setup();
    stub.schedule({ kind: "status", status: 404, message: "Not Found" });
    await expect(engine.reloadAdapter("writer", "/a")).rejects.toThrow(
      /VLLM_ALLOW_RUNTIME_LORA_UPDATING=True/,
    );
  });

  it("waits for the policy's requests in flight and holds new ones until loaded", async () => {
    await setup({ latencyMs: 40 });
    const before = engine.generate(
      [0, 1].map((seed) => ({ policyId: "writer", observation, seed })),
      samplingParams({}),
    );
    await new Promise((r) => setTimeout(r, 10));
    const reload = engine.reloadAdapter("writer", "/adapters/writer/v1", { inPlace: false });
    const after = engine.generate([{ policyId: "writer", observation, seed: 2 }], samplingParams({}));
    await Promise.all([before, reload, after]);
    const byPath = (path: string) => stub.requests.filter((r) => r.path === path);
    const unload = byPath("/v1/unload_lora_adapter")[0]!;
    const load = byPath("/v1/load_lora_adapter")[0]!;
    const gens = byPath("/v1/completions");
    expect(gens.map((r) => r.body.seed)).toEqual([0, 1, 2]);
    expect(unload.start).toBeGreaterThanOrEqual(Math.max(gens[0]!.end!, gens[1]!.end!));
    expect(gens[2]!.start).toBeGreaterThanOrEqual(load.end!);
  });
});

describe("generate only", () => {
  it("trainStep, save and load say how training works with this engine", async () => {
    await setup();
    await expect(engine.save("writer")).rejects.toThrow(
      /save\(\): the openai engine only generates.*reloadAdapter/,
    );
    await expect(engine.load("writer", {})).rejects.toThrow(UnsupportedOperationError);
    await expect(
      engine.trainStep("writer", [], {} as Parameters<OpenAIEngine["trainStep"]>[2]),
    ).rejects.toThrow(/trainStep\(\)/);
  });

  it("encodes like the prompt it sends", async () => {
    await setup();
    expect(engine.encode("writer", observation, "s7")).toEqual({
      promptTokenIds: PROMPT_IDS,
      completionTokenIds: [115, 55, IM_END_ID],
    });
    expect(engine.policies()).toEqual([
      { id: "writer", parameters: 0, vocabSize: 259, optimizerStep: 0 },
      { id: "critic", parameters: 0, vocabSize: 259, optimizerStep: 0 },
    ]);
  });

  it("close() cancels requests in flight", async () => {
    await setup();
    stub.schedule({ kind: "delay", ms: 10_000 });
    const pending = engine.generate([{ policyId: "writer", observation, seed: 1 }], samplingParams({}));
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    await engine.close();
    await expect(pending).rejects.toThrow(/the engine was closed/);
    expect(performance.now() - t0).toBeLessThan(5_000);
    await expect(engine.generate([], samplingParams({}))).rejects.toThrow(/generate: the engine is closed/);
  });
});
