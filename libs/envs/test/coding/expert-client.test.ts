import { createServer, type IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { chatClientOptions, expertFeedback, type TestReport } from "../../src/coding/index.ts";
import { doubleSum, feedbackContext } from "./fixtures.ts";

interface Received {
  readonly url: string | undefined;
  readonly auth: string | undefined;
  readonly body: {
    model: string;
    messages: { role: string; content: string }[];
    temperature: number;
    max_tokens: number;
  };
}

/** A real HTTP server on 127.0.0.1 answering like OpenAI's chat completions. `statuses` are served in order first. */
async function stubServer(statuses: number[] = []) {
  const received: Received[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    received.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(raw) });
    const status = statuses.shift() ?? 200;
    if (status !== 200) {
      res.writeHead(status).end(`{"error":"busy"}`);
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        id: "chatcmpl-1",
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: "  Handle the empty list.  " },
            finish_reason: "stop",
          },
        ],
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return { received, baseUrl: `http://127.0.0.1:${port}/v1`, close: () => server.close() };
}

const report: TestReport = {
  syntaxOk: true,
  tests: [
    { source: "assert candidate([]) == 0", passed: false, error: "AssertionError" },
    { source: "assert candidate([1]) == 2", passed: true },
  ],
  passed: 1,
  total: 2,
  setupErrors: [],
  output: "",
  functions: [],
  runStatus: "ok",
};

const context = feedbackContext(report);

describe("expert feedback transition", () => {
  it("posts an OpenAI-shaped request and returns the expert's text", async () => {
    const stub = await stubServer();
    try {
      const expert = expertFeedback({
        baseUrl: stub.baseUrl,
        model: "critic-1",
        apiKey: "sk-test",
        maxTokens: 64,
      });
      const text = await expert.feedback(context);
      expect(text).toBe("Expert feedback: Handle the empty list.");
      expect(stub.received).toHaveLength(1);
      const got = stub.received[0]!;
      expect(got.url).toBe("/v1/chat/completions");
      expect(got.auth).toBe("Bearer sk-test");
      expect(got.body.model).toBe("critic-1");
      expect(got.body.max_tokens).toBe(64);
      expect(got.body.temperature).toBe(0);
      expect(got.body.messages.map((m) => m.role)).toEqual(["system", "user"]);
      const user = got.body.messages[1]!.content;
      expect(user).toContain(doubleSum.prompt);
      expect(user).toContain("def double_sum(xs):\n    return 1");
      expect(user).toContain("Passed 1 of 2 tests.");
      // Hidden asserts are not revealed unless asked.
      expect(user).not.toContain("assert candidate([]) == 0");
    } finally {
      stub.close();
    }
  });

  it("retries 5xx and 429, then succeeds; gives up with a clear error", async () => {
    const flaky = await stubServer([503, 429]);
    try {
      const expert = expertFeedback({ baseUrl: flaky.baseUrl, model: "m", retries: 2, backoffMs: 1 });
      expect(await expert.feedback(context)).toContain("Handle the empty list.");
      expect(flaky.received).toHaveLength(3);
    } finally {
      flaky.close();
    }
    const down = await stubServer([500, 500]);
    try {
      const expert = expertFeedback({ baseUrl: down.baseUrl, model: "m", retries: 1, backoffMs: 1 });
      await expect(expert.feedback(context)).rejects.toThrow(/failed after 2 attempts: HTTP 500/);
    } finally {
      down.close();
    }
    const bad = await stubServer([400]);
    try {
      const expert = expertFeedback({ baseUrl: bad.baseUrl, model: "m", retries: 3, backoffMs: 1 });
      await expect(expert.feedback(context)).rejects.toThrow(/HTTP 400/);
      expect(bad.received).toHaveLength(1);
    } finally {
      bad.close();
    }
  });

  it("reads options from the environment and validates them", () => {
    const o = chatClientOptions(
      {},
      { TROUPE_EXPERT_BASE_URL: "http://x:1/v1", TROUPE_EXPERT_MODEL: "m", OPENAI_API_KEY: "k" },
    );
    expect([o.baseUrl, o.model, o.apiKey, o.retries]).toEqual(["http://x:1/v1", "m", "k", 2]);
    expect(() => chatClientOptions({}, {})).toThrow(/baseUrl/);
    expect(() => chatClientOptions({ baseUrl: "http://x/v1" }, {})).toThrow(/model/);
  });
});
