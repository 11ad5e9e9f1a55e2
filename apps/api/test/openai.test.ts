/**
 * The API with the OpenAI-compatible backend against a real local HTTP server that answers like
 * vLLM (libs/engine-openai's test stub: the reply to seed s is the text `s<s>`). Its latency makes
 * solves slow on purpose, which is what the deadline (504) and client-disconnect tests need.
 */
import { connect } from "node:net";
import {
  createOpenAIBackend,
  createTeamRegistry,
  type InferenceBackend,
  type TeamRegistry,
} from "@troupe/teams";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
// The stub is engine-openai's test server (not part of that package's exports): one stub for the repo.
import { StubOpenAIServer } from "../../../libs/engine-openai/test/stub-server.ts";
import { createApp, type TroupeApp } from "../src/app.ts";
import { type Listening, listen, parseSse, STACK_TRACE, tempStore, tinyTeam } from "./fixtures.ts";

const tmp = tempStore();
const MODELS = ["tiny-planner", "tiny-fixer"];
let registry: TeamRegistry;
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  registry = createTeamRegistry(tmp.store);
  await registry.publish(await tinyTeam("tiny"));
}, 60_000);
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
});
afterAll(() => tmp.cleanup());

/** A stub server with `latencyMs` per answer, an app on it, served on 127.0.0.1. */
async function setup(latencyMs: number, deadlineMs = 20_000) {
  const stub = await StubOpenAIServer.start({ models: MODELS, latencyMs });
  const backend: InferenceBackend = createOpenAIBackend({ baseUrl: stub.url, retries: 0 });
  const logged: string[] = [];
  const app: TroupeApp = createApp({
    registry,
    backend,
    limits: { deadlineMs },
    log: (level, message) => logged.push(`${level}: ${message}`),
  });
  const server: Listening = await listen(app.fetch);
  open.push(server, { close: async () => backend.close?.() }, stub);
  return { stub, app, server, logged };
}

const post = (server: Listening, body: unknown) =>
  fetch(`${server.url}/v1/solve`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("OpenAI-compatible backend", () => {
  it("answers /v1/solve (JSON and SSE) with the server's completions, one request per agent turn", async () => {
    const { stub, server } = await setup(0);
    const res = await post(server, { team: "tiny", input: { generate: { seed: 3 } }, options: { seed: 9 } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.team).toEqual({ name: "tiny", version: 1 });
    expect(body.turns.length).toBeGreaterThan(0);
    // Each completion is the stub's reply to the request's seed (`s<seed>` cut at max_tokens = the
    // manifest's 8), from the model named after the policy.
    const completions = stub.requests.filter((r) => r.path === "/v1/completions");
    expect(completions).toHaveLength(body.turns.length);
    body.turns.forEach((turn: { completion: string; policy: string }, i: number) => {
      expect(completions[i]!.body.model).toBe(`tiny-${turn.policy}`);
      const { seed, max_tokens } = completions[i]!.body;
      expect(max_tokens).toBe(8);
      expect(turn.completion).toBe(`s${seed}`.slice(0, max_tokens));
    });

    const sse = await post(server, {
      team: "tiny",
      input: { generate: { seed: 3 } },
      options: { seed: 9, stream: true },
    });
    const events = parseSse(await sse.text());
    expect(events.map((e) => e.event)).toEqual([...body.turns.map(() => "turn"), "result"]);
    expect(events.slice(0, -1).map((e) => (e.data as { completion: string }).completion)).toEqual(
      body.turns.map((t: { completion: string }) => t.completion),
    );
    expect(events.at(-1)!.data).toMatchObject({ answer: body.answer, teamReturn: body.teamReturn, seed: 9 });
  });

  it("504 deadline_exceeded when the solve runs past the deadline (JSON), an `error` event when streaming", async () => {
    // The server answers after 5 s, the deadline is 300 ms: an answer well before 5 s came from the
    // deadline, whatever the machine's load.
    const { app, server } = await setup(5_000, 300);
    const started = performance.now();
    const res = await post(server, { team: "tiny", input: { generate: { seed: 1 } } });
    expect(res.status).toBe(504);
    const text = await res.text();
    expect(JSON.parse(text).error.code).toBe("deadline_exceeded");
    expect(text).not.toMatch(STACK_TRACE);
    expect(performance.now() - started).toBeLessThan(4_000); // answered at the deadline, not after the turn

    const sse = await post(server, {
      team: "tiny",
      input: { generate: { seed: 1 } },
      options: { stream: true },
    });
    expect(sse.status).toBe(200);
    const events = parseSse(await sse.text());
    expect(events.at(-1)).toEqual({
      event: "error",
      data: { error: { code: "deadline_exceeded", message: expect.stringMatching(/300 ms/) } },
    });
    expect(app.stats.byStatus[504]).toBe(1);
  });

  it("a client that disconnects mid-stream aborts the solve; the server stays healthy", async () => {
    const { stub, app, server, logged } = await setup(150);
    const baseline = await post(server, {
      team: "tiny",
      input: { generate: { seed: 4 } },
      options: { transcript: false },
    });
    expect(baseline.status).toBe(200);
    const callsPerSolve = stub.requests.length;
    expect(callsPerSolve).toBeGreaterThanOrEqual(3);

    // A raw socket: read until the first `turn` event, then hang up without a word.
    const body = JSON.stringify({
      team: "tiny",
      input: { generate: { seed: 4 } },
      options: { stream: true },
    });
    await new Promise<void>((resolve, reject) => {
      const socket = connect(server.port, "127.0.0.1", () => {
        socket.write(
          `POST /v1/solve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
      });
      let seen = "";
      socket.on("data", (chunk) => {
        seen += chunk.toString();
        if (seen.includes("event: turn")) {
          socket.destroy();
          resolve();
        }
      });
      socket.on("error", reject);
    });
    // The abort is noticed (event-driven wait, generous on a loaded machine), then we wait longer
    // than the rest of the solve would take: no turn may start after it.
    await vi.waitFor(() => expect(app.stats.inFlightSolves).toBe(0), { timeout: 15_000, interval: 20 });
    expect(app.stats.clientAborts).toBe(1);
    await new Promise((r) => setTimeout(r, 150 * (callsPerSolve + 1)));
    // At most the generation in flight at the disconnect finishes; no new turn starts.
    expect(stub.requests.length - callsPerSolve).toBeLessThan(callsPerSolve);
    expect(stub.requests.length - callsPerSolve).toBeLessThanOrEqual(2);
    const health = await fetch(`${server.url}/healthz`);
    expect(await health.json()).toEqual({ ok: true });
    const again = await post(server, { team: "tiny", input: { generate: { seed: 4 } } });
    expect(again.status).toBe(200);

    // A JSON client that gives up waiting: the same abort, no error logged.
    const before = stub.requests.length;
    const gaveUp = new AbortController();
    setTimeout(() => gaveUp.abort(), 200);
    await expect(
      fetch(`${server.url}/v1/solve`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ team: "tiny", input: { generate: { seed: 4 } } }),
        signal: gaveUp.signal,
      }),
    ).rejects.toThrow();
    await vi.waitFor(() => expect(app.stats.clientAborts).toBe(2), { timeout: 15_000, interval: 20 });
    await vi.waitFor(() => expect(app.stats.inFlightSolves).toBe(0), { timeout: 15_000, interval: 20 });
    await new Promise((r) => setTimeout(r, 150 * (callsPerSolve + 1)));
    expect(stub.requests.length - before).toBeLessThanOrEqual(2);
    expect(logged).toEqual([]);
  });
});
