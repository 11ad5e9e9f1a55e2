/**
 * The API over real HTTP (127.0.0.1, @hono/node-server) with a real tiny ONNX team published into
 * a temp FileStore: happy paths checked against an in-process solve() of the same team, and hostile
 * requests each getting their documented status, code and field path — never a stack trace.
 */
import { connect } from "node:net";
import {
  createTeamRegistry,
  loadTeam,
  type SolveResult,
  solve,
  type TeamManifest,
  type TeamRegistry,
} from "@troupe/teams";
import { createOnnxBackend, type OnnxBackend } from "@troupe/teams/onnx";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type TroupeApp } from "../src/app.ts";
import { keyAuth, sha256Hex } from "../src/auth.ts";
import type { LogLevel } from "../src/context.ts";
import { type Listening, listen, parseSse, STACK_TRACE, tempStore, tinyTeam } from "./fixtures.ts";

const tmp = tempStore();
const ALICE = "alice-secret-key-0001";
const BOB = "bob-secret-key-0002"; // 10 requests per minute
let registry: TeamRegistry;
let manifest: TeamManifest;
let backend: OnnxBackend;
let app: TroupeApp;
let server: Listening;
const logged: { level: LogLevel; message: string; fields?: Record<string, unknown> }[] = [];
/** Every response body seen by the tests, checked for stack traces at the end. */
const bodies: string[] = [];

beforeAll(async () => {
  registry = createTeamRegistry(tmp.store);
  manifest = await registry.publish(await tinyTeam("tiny"));
  await registry.setAlias("tiny", "stable", 1);
  // Plan-Path with the `tool` roles runs agent-written Python: it needs a sandbox.
  await registry.publish({
    ...(await tinyTeam("tooly", { name: "plan-path", options: { roles: "tool", rows: 4, cols: 4 } })),
  });
  backend = createOnnxBackend();
  app = createApp({
    registry,
    backend,
    auth: keyAuth([
      { id: "alice", sha256: await sha256Hex(ALICE), ratePerMinute: 1_000_000 },
      { id: "bob", sha256: await sha256Hex(BOB), ratePerMinute: 10 },
    ]),
    limits: { bodyBytes: 4096, deadlineMs: 20_000 },
    resolveTtlMs: 0,
    now: () => 0, // a frozen clock: buckets never refill, so rate-limit counts are exact
    log: (level, message, fields) => logged.push({ level, message, ...(fields ? { fields } : {}) }),
  });
  server = await listen(app.fetch);
}, 60_000);

afterAll(async () => {
  await server.close();
  await backend.close();
  tmp.cleanup();
  expect("    at solve (/work/x/solve.ts:10:5)").toMatch(STACK_TRACE); // the pattern does catch a stack line
  expect(bodies.length).toBeGreaterThan(1000);
  for (const body of bodies) expect(body).not.toMatch(STACK_TRACE);
});

async function call(
  path: string,
  init: RequestInit & { key?: string | null; json?: unknown } = {},
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected field by field
): Promise<{ status: number; headers: Headers; text: string; json: () => any }> {
  const headers = new Headers(init.headers);
  if (init.key !== null) headers.set("authorization", `Bearer ${init.key ?? ALICE}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set("content-type", "application/json");
    body = JSON.stringify(init.json);
  }
  const res = await fetch(`${server.url}${path}`, { ...init, headers, body });
  const text = await res.text();
  bodies.push(text);
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) };
}

const solveBody = (extra: Record<string, unknown> = {}) => ({
  team: "tiny",
  input: { generate: { seed: 3 } },
  options: { seed: 5 },
  ...extra,
});

/** Everything of a solve but timings. */
const timeless = <T extends { latencyMs?: number; turns?: { ms: number }[] }>(r: T) => ({
  ...r,
  latencyMs: 0,
  ...(r.turns ? { turns: r.turns.map((t) => ({ ...t, ms: 0 })) } : {}),
});

describe("happy paths (ONNX backend)", () => {
  let direct: SolveResult;
  beforeAll(async () => {
    // The same team and seed solved in-process: the HTTP answer must be exactly this.
    const loaded = await loadTeam(registry, manifest, backend);
    direct = await solve(loaded, { generate: { seed: 3 } }, { sampling: { seed: 5 } });
  }, 60_000);

  it("GET /healthz is public", async () => {
    const res = await call("/healthz", { key: null });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ ok: true });
  });

  it("POST /v1/solve answers JSON equal to solve() of the same team and seed", async () => {
    const res = await call("/v1/solve", { method: "POST", json: solveBody() });
    expect(res.status).toBe(200);
    const body = res.json();
    expect(body.team).toEqual({ name: "tiny", version: 1 });
    const { seed: _seed, ...expected } = direct;
    expect(timeless(body)).toEqual(timeless({ team: { name: "tiny", version: 1 }, ...expected, seed: 5 }));
    expect(body.turns.length).toBeGreaterThan(0);
    expect(Object.keys(body.usage).sort()).toEqual(
      [...new Set(body.turns.map((t: { role: string }) => t.role))].sort(),
    );
  });

  it("transcript: false leaves the turns out; name@ref picks versions and aliases", async () => {
    const res = await call("/v1/solve", {
      method: "POST",
      json: solveBody({ options: { seed: 5, transcript: false } }),
    });
    expect(res.status).toBe(200);
    expect(res.json().turns).toBeUndefined();
    expect(res.json().answer).toEqual(direct.answer);
    for (const team of ["tiny@1", "tiny@v1", "tiny@stable", "tiny@latest"]) {
      const r = await call("/v1/solve", {
        method: "POST",
        json: solveBody({ team, options: { transcript: false } }),
      });
      expect(r.status, team).toBe(200);
      expect(r.json().team).toEqual({ name: "tiny", version: 1 });
    }
  });

  it("stream: true sends one `turn` event per agent turn, then `result`", async () => {
    const res = await call("/v1/solve", {
      method: "POST",
      json: solveBody({ options: { seed: 5, stream: true } }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = parseSse(res.text);
    expect(events.map((e) => e.event)).toEqual([...direct.turns.map(() => "turn"), "result"]);
    expect(events.slice(0, -1).map((e) => ({ ...(e.data as object), ms: 0 }))).toEqual(
      direct.turns.map((t) => ({ ...t, ms: 0 })),
    );
    const result = events.at(-1)!.data as Record<string, unknown>;
    expect(result.turns).toBeUndefined();
    expect(result).toMatchObject({
      team: { name: "tiny", version: 1 },
      task: direct.task,
      answer: direct.answer,
      solved: direct.solved,
      teamReturn: direct.teamReturn,
      usage: direct.usage,
      seed: 5,
    });
  });

  it("GET /v1/teams lists the teams; GET /v1/teams/{name} gives a manifest by ref", async () => {
    const list = await call("/v1/teams");
    expect(list.status).toBe(200);
    const tiny = list.json().teams.find((t: { name: string }) => t.name === "tiny");
    expect(tiny).toEqual({
      name: "tiny",
      versions: [1],
      aliases: { stable: 1 },
      latest: { version: 1, environment: manifest.environment, roles: manifest.roles },
    });
    for (const q of ["", "?ref=stable", "?ref=v1", "?ref=1"]) {
      const one = await call(`/v1/teams/tiny${q}`);
      expect(one.status, q).toBe(200);
      expect(one.json()).toEqual(manifest);
    }
  });

  it("/openapi.json is generated from the routes; /docs renders it without any external resource", async () => {
    const doc = (await call("/openapi.json", { key: null })).json();
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths).sort()).toEqual(["/healthz", "/v1/solve", "/v1/teams", "/v1/teams/{name}"]);
    expect(Object.keys(doc.paths["/v1/solve"].post.responses).sort()).toEqual(
      [
        "200",
        "400",
        "401",
        "404",
        "408",
        "413",
        "415",
        "422",
        "429",
        "500",
        "501",
        "503",
        "504",
        "507",
      ].sort(),
    );
    expect(doc.components.schemas.SolveRequest.required).toEqual(["team", "input"]);
    const docs = await call("/docs", { key: null });
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-type")).toMatch(/^text\/html/);
    expect(docs.text).toContain("<code>/v1/solve</code>");
    expect(docs.text).toContain('id="schema-SolveRequest"');
    expect(docs.text).not.toMatch(/<script|<link|https?:\/\/(?!127\.0\.0\.1)/);
  });
});

describe("extra routes", () => {
  it("GET / redirects to /docs, unless extraRoutes (the playground) serve it, publicly", async () => {
    const root = await fetch(`${server.url}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/docs");
    const extraRoutes = new Hono().get("/", (c) => c.text("playground"));
    const withPage = createApp({ registry, backend, auth: keyAuth([]), extraRoutes, log: () => {} });
    const page = await withPage.request("/");
    expect(page.status).toBe(200);
    expect(await page.text()).toBe("playground");
    expect((await withPage.request("/v1/teams")).status).toBe(401); // the rest keeps its auth
  });
});

describe("hostile requests", () => {
  it("401 without a key, with an unknown key, or with a malformed Authorization header", async () => {
    const cases: Record<string, string>[] = [
      {},
      { authorization: "Bearer nope" },
      { authorization: "Basic abc" },
      { authorization: "Bearer" },
    ];
    for (const headers of cases) {
      const res = await call("/v1/teams", { key: null, headers });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.json().error.code).toBe("unauthorized");
    }
  });

  it("413 for a body over the limit, with or without Content-Length", async () => {
    const big = JSON.stringify({ ...solveBody(), input: { task: { pad: "x".repeat(5000) } } });
    const sized = await call("/v1/solve", {
      method: "POST",
      body: big,
      headers: { "content-type": "application/json" },
    });
    expect(sized.status).toBe(413);
    expect(sized.json().error.code).toBe("payload_too_large");
    const chunks = new TextEncoder().encode(big);
    const chunked = await call("/v1/solve", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < chunks.length; i += 1000) controller.enqueue(chunks.slice(i, i + 1000));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(chunked.json().error.code).toBe("payload_too_large");
  });

  it("400 with the field path for wrong types, ranges and unknown fields", async () => {
    const cases: [unknown, (string | number)[]][] = [
      [{ ...solveBody(), team: 5 }, ["team"]],
      [{ ...solveBody(), team: "../etc" }, ["team"]],
      [{ ...solveBody(), input: { generate: { seed: "3" } } }, ["input", "generate", "seed"]],
      [{ ...solveBody(), input: { generate: { seed: -1 } } }, ["input", "generate", "seed"]],
      [{ ...solveBody(), input: {} }, ["input"]],
      [{ ...solveBody(), input: { task: {}, generate: { seed: 1 } } }, ["input"]],
      [{ ...solveBody(), options: { maxTurns: "3" } }, ["options", "maxTurns"]],
      [{ ...solveBody(), options: { temperature: -1 } }, ["options", "temperature"]],
      [{ ...solveBody(), options: { maxTokens: 1e9 } }, ["options", "maxTokens"]],
      [{ ...solveBody(), options: { stream: "yes" } }, ["options", "stream"]],
      [{ ...solveBody(), options: { sneaky: 1 } }, ["options", "sneaky"]],
      [{ ...solveBody(), extra: true }, ["extra"]],
      [{ input: { generate: { seed: 1 } } }, ["team"]],
      [[1, 2, 3], []],
      ["just a string", []],
    ];
    for (const [body, path] of cases) {
      const res = await call("/v1/solve", { method: "POST", json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json().error, JSON.stringify(body)).toMatchObject({ code: "invalid_request", path });
    }
  });

  it("400 for malformed JSON or no body, 415 for a body that is not JSON", async () => {
    const malformed = await call("/v1/solve", {
      method: "POST",
      body: '{"team": "tiny",',
      headers: { "content-type": "application/json" },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.json().error.code).toBe("invalid_request");
    const empty = await call("/v1/solve", {
      method: "POST",
      headers: { "content-type": "application/json" },
    });
    expect(empty.status).toBe(400);
    const text = await call("/v1/solve", {
      method: "POST",
      body: "team=tiny",
      headers: { "content-type": "text/plain" },
    });
    expect(text.status).toBe(415);
    expect(text.json().error).toMatchObject({ code: "invalid_request", path: ["headers", "content-type"] });
  });

  it("422 with the field path for a task the environment rejects, or more turns than the team plays", async () => {
    const badTask = await call("/v1/solve", {
      method: "POST",
      json: { team: "tiny", input: { task: { rows: 4, cols: 4, grid: "nope" } } },
    });
    expect(badTask.status).toBe(422);
    expect(badTask.json().error.code).toBe("invalid_request");
    expect(badTask.json().error.path.slice(0, 2)).toEqual(["input", "task"]);
    const turns = await call("/v1/solve", { method: "POST", json: solveBody({ options: { maxTurns: 64 } }) });
    expect(turns.status).toBe(422);
    expect(turns.json().error).toMatchObject({ code: "invalid_request", path: ["options", "maxTurns"] });
  });

  it("404 for unknown teams, versions and aliases, and unknown routes", async () => {
    for (const team of ["nope", "tiny@v9", "tiny@canary"]) {
      const res = await call("/v1/solve", { method: "POST", json: solveBody({ team }) });
      expect(res.status, team).toBe(404);
      expect(res.json().error).toMatchObject({ code: "not_found", path: ["team"] });
    }
    const team = await call("/v1/teams/nope");
    expect(team.status).toBe(404);
    expect(team.json().error).toMatchObject({ code: "not_found", path: ["path", "name"] });
    const badRef = await call("/v1/teams/tiny?ref=../x");
    expect(badRef.status).toBe(400);
    expect(badRef.json().error).toMatchObject({ code: "invalid_request", path: ["query", "ref"] });
    const route = await call("/v2/whatever", { key: null });
    expect(route.status).toBe(404);
    expect(route.json().error.code).toBe("not_found");
  });

  it("501 for a team that runs agents' code when there is no sandbox", async () => {
    const res = await call("/v1/solve", { method: "POST", json: solveBody({ team: "tooly" }) });
    expect(res.status).toBe(501);
    expect(res.json().error).toMatchObject({ code: "unsupported", path: ["team"] });
  });

  it("500 `internal` for a corrupt stored manifest: logged with its stack, nothing of it in the body", async () => {
    const before = logged.length;
    const key = "teams/broken/versions/00000001/manifest.json";
    await tmp.store.put(key, new TextEncoder().encode("{ not json"));
    const res = await call("/v1/solve", { method: "POST", json: solveBody({ team: "broken" }) }).finally(() =>
      tmp.store.delete(key),
    );
    expect(res.status).toBe(500);
    expect(res.json()).toEqual({ error: { code: "internal", message: "internal server error" } });
    const entry = logged.slice(before).find((l) => l.level === "error");
    expect(entry?.fields?.error).toMatchObject({ name: "ManifestError" });
    expect(String((entry?.fields?.error as { stack?: string } | undefined)?.stack)).toMatch(/manifest/);
  });

  it("GET /v1/teams with one corrupt manifest: the other teams listed, the bad one logged by name", async () => {
    const before = logged.length;
    const key = "teams/broken/versions/00000001/manifest.json";
    await tmp.store.put(key, new TextEncoder().encode("{ not json"));
    const res = await call("/v1/teams").finally(() => tmp.store.delete(key));
    expect(res.status).toBe(200);
    const names = res.json().teams.map((t: { name: string }) => t.name);
    expect(names).not.toContain("broken");
    expect(names.length).toBeGreaterThan(0);
    const entry = logged.slice(before).find((l) => l.level === "error");
    expect(entry?.message).toBe("team left out of /v1/teams: unreadable");
    expect(entry?.fields).toMatchObject({ team: "broken", error: { name: "ManifestError" } });
  });

  it("1,000 requests over a key's limit: exactly its rate served, the rest 429 with Retry-After, none 5xx", async () => {
    const before = app.stats.rateLimited;
    const statuses: number[] = [];
    const retryAfter = new Set<string | null>();
    const queue = Array.from({ length: 1010 }, (_, i) => i);
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (queue.pop() !== undefined) {
          const res = await call("/v1/teams", { key: BOB });
          statuses.push(res.status);
          if (res.status === 429) {
            retryAfter.add(res.headers.get("retry-after"));
            expect(res.json().error.code).toBe("rate_limited");
          }
        }
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(1000);
    expect(statuses.filter((s) => s >= 500)).toHaveLength(0);
    // 10 per minute → one token every 6 s.
    expect([...retryAfter]).toEqual(["6"]);
    expect(app.stats.rateLimited - before).toBe(1000);
    // Another key is not affected.
    expect((await call("/v1/teams")).status).toBe(200);
  });

  it("a client that sends half a body and hangs up leaves the server healthy", async () => {
    await new Promise<void>((resolve) => {
      const socket = connect(server.port, "127.0.0.1", () => {
        socket.write(
          `POST /v1/solve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ALICE}\r\n` +
            `Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"team": "ti`,
        );
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 100);
      });
    });
    expect((await call("/healthz", { key: null })).status).toBe(200);
    expect((await call("/v1/solve", { method: "POST", json: solveBody() })).status).toBe(200);
  });
});
