/**
 * The Workers build, run locally and offline: wrangler bundles apps/api/src/worker.ts with
 * infra/workers/wrangler.toml and runs it in workerd (unstable_startWorker) on 127.0.0.1.
 *
 * A real tiny team (fixtures.ts: freshly initialised Qwen3 checkpoints with the byte tokenizer,
 * saved by the ONNX engine; Plan-Path 4×4, planner then fixer, 2 turns) is published into the Worker's local R2 bucket through the R2 binding (wrangler's
 * getPlatformProxy, same persistence folder), and its policies are served by the OpenAI-compatible
 * stub server of libs/engine-openai's tests, whose replies are known exactly: `s<seed>` for a
 * request with seed `seed`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTeamRegistry } from "@troupe/teams";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getPlatformProxy } from "wrangler";
import { StubOpenAIServer } from "../../../libs/engine-openai/test/stub-server.ts";
import { sha256Hex } from "../src/auth.ts";
import { type R2BucketBinding, R2Store } from "../src/worker/r2-store.ts";
import { planPath, tinyTeam } from "./fixtures.ts";
import { type LocalWorker, startLocalWorker } from "./local-worker.ts";

const CONFIG = new URL("../../../infra/workers/wrangler.toml", import.meta.url).pathname;
// Bundle the workspace packages from their TypeScript sources (as `npm run dev-worker` does).
process.env.WRANGLER_BUILD_CONDITIONS = "@troupe/source,workerd,worker,browser";
process.env.WRANGLER_SEND_METRICS = "false";

const API_KEY = "worker-test-key";
/** A second key, used only by the rate-limit case. */
const RATE_KEY = "worker-rate-key";
const TEAM = "tiny-path";
type Worker = LocalWorker;

/** The Worker with extra vars; its R2 state lives in `persist`. */
const startWorker = (persist: string, vars: Record<string, string>) =>
  startLocalWorker(CONFIG, persist, vars);

let persist: string;
let stub: StubOpenAIServer;
let openaiWorker: Worker;
let onnxWorker: Worker;
let openaiUrl: URL;
let onnxUrl: URL;
const auth = { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" };

beforeAll(async () => {
  persist = mkdtempSync(join(tmpdir(), "troupe-worker-"));
  stub = await StubOpenAIServer.start({ models: [`${TEAM}-planner`, `${TEAM}-fixer`] });
  // `wrangler dev --persist-to X` keeps its state in X/v3; getPlatformProxy takes the v3 folder itself.
  const proxy = await getPlatformProxy<{ TEAMS: R2BucketBinding }>({
    configPath: CONFIG,
    persist: { path: join(persist, "v3") },
  });
  try {
    await createTeamRegistry(new R2Store(proxy.env.TEAMS)).publish(await tinyTeam(TEAM));
  } finally {
    await proxy.dispose();
  }
  const hashes = `${await sha256Hex(API_KEY)},${await sha256Hex(RATE_KEY)}`;
  [openaiWorker, onnxWorker] = await Promise.all([
    startWorker(persist, { TROUPE_OPENAI_BASE_URL: `${stub.url}/v1`, TROUPE_API_KEY_HASHES: hashes }),
    startWorker(persist, {
      TROUPE_BACKEND: "onnx",
      TROUPE_API_KEY_HASHES: hashes,
      TROUPE_RATE_PER_MINUTE: "3",
    }),
  ]);
  [openaiUrl, onnxUrl] = await Promise.all([openaiWorker.url, onnxWorker.url]);
}, 60_000);

afterAll(async () => {
  await Promise.all([openaiWorker?.dispose(), onnxWorker?.dispose()]);
  await stub?.close();
  if (persist) rmSync(persist, { recursive: true, force: true });
});

describe("the API on Cloudflare Workers (workerd, local R2)", { timeout: 60_000 }, () => {
  it("listens on 127.0.0.1 and answers /healthz without a key", async () => {
    expect(openaiUrl.hostname).toBe("127.0.0.1");
    const response = await fetch(new URL("/healthz", openaiUrl));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
  });

  it("refuses /v1 without a key, or with a wrong one: 401 unauthorized", async () => {
    const missing = await fetch(new URL("/v1/teams", openaiUrl));
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({
      error: { code: "unauthorized", message: "missing Authorization: Bearer <key>" },
    });
    const wrong = await fetch(new URL("/v1/teams", openaiUrl), { headers: { authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
  });

  it("lists the team published into its R2 bucket", async () => {
    const response = await fetch(new URL("/v1/teams", openaiUrl), { headers: auth });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      teams: { name: string; versions: number[]; latest: unknown }[];
    };
    expect(body.teams.map((t) => [t.name, t.versions])).toEqual([[TEAM, [1]]]);
    expect(body.teams[0]!.latest).toMatchObject({ version: 1, environment: planPath });
  });

  it("POST /v1/solve runs the team against the OpenAI-compatible server: 200 with every turn", async () => {
    const before = stub.requests.length;
    const response = await fetch(new URL("/v1/solve", openaiUrl), {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ team: TEAM, input: { generate: { seed: 5 } }, options: { seed: 11 } }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      team: { name: string; version: number };
      task: { id: string; payload: { grid: string[] } };
      solved: boolean | null;
      turns: { agent: string; policy: string; completion: string; turn: number }[];
      usage: Record<string, { calls: number }>;
    };
    expect(body.team).toEqual({ name: TEAM, version: 1 });
    expect(body.task.payload.grid).toHaveLength(4);
    // The stub answers "s<seed>": not a U/D/L/R plan, so both roles fail on every turn of both
    // rounds (maxTurns 2, sequential: planner then fixer), and the episode ends unsolved.
    const calls = stub.requests.slice(before).filter((r) => r.path === "/v1/completions");
    expect(calls.map((r) => r.body.model)).toEqual([
      `${TEAM}-planner`,
      `${TEAM}-fixer`,
      `${TEAM}-planner`,
      `${TEAM}-fixer`,
    ]);
    expect(body.turns.map((t) => [t.turn, t.agent, t.policy])).toEqual([
      [0, "planner", "planner"],
      [0, "fixer", "fixer"],
      [1, "planner", "planner"],
      [1, "fixer", "fixer"],
    ]);
    // The stub's reply "s<seed><|im_end|>" cut at max_tokens (8), the special token not shown.
    expect(body.turns.map((t) => t.completion)).toEqual(
      calls.map((r) => `s${r.body.seed}`.slice(0, r.body.max_tokens)),
    );
    expect(body.solved).toBe(false);
    expect(body.usage.planner?.calls).toBe(2);
    expect(body.usage.fixer?.calls).toBe(2);
  });

  it("streams the turns as server-sent events, then the result", async () => {
    const response = await fetch(new URL("/v1/solve", openaiUrl), {
      method: "POST",
      headers: auth,
      body: JSON.stringify({
        team: TEAM,
        input: { generate: { seed: 5 } },
        options: { seed: 11, stream: true },
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const text = await response.text();
    const events = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    if (events.includes("error")) console.error(text);
    expect(events).toEqual(["turn", "turn", "turn", "turn", "result"]);
  });

  it("serves the playground page at / with its CSP", async () => {
    const response = await fetch(new URL("/", openaiUrl));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("content-security-policy")).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(await response.text()).toContain("<title>Troupe playground</title>");
  });

  it("answers 501 unsupported when configured with the onnx backend (no ONNX runtime on Workers)", async () => {
    const response = await fetch(new URL("/v1/solve", onnxUrl), {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ team: TEAM, input: { generate: { seed: 5 } } }),
    });
    expect(response.status).toBe(501);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("unsupported");
    expect(body.error.message).toMatch(/onnx backend cannot run on Cloudflare Workers/);
    // The rest of the API still works there: the registry is read from R2.
    const teams = await fetch(new URL(`/v1/teams/${TEAM}`, onnxUrl), { headers: auth });
    expect(((await teams.json()) as { name: string; version: number }).version).toBe(1);
  });

  it("keeps one app per isolate: a key's rate limit (3 per minute here) holds across requests", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await fetch(new URL("/v1/teams", onnxUrl), {
        headers: { authorization: `Bearer ${RATE_KEY}` },
      });
      statuses.push(response.status);
      if (response.status === 429) {
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
      } else await response.body?.cancel();
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
