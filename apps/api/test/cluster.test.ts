/**
 * `api serve --workers 2` (src/node.ts in a child process, node:cluster): two server processes on
 * one port. Checked over real HTTP on 127.0.0.1:
 *  - concurrent solves are answered, each the single server's answer for the same request, and
 *    both workers serve (each logs its counters when it stops);
 *  - a key's rate limit holds across the workers (the primary holds the buckets): 40 requests on
 *    fresh connections to a key limited to 25 a minute → exactly 25 × 200 and 15 × 429;
 *  - a worker killed with SIGKILL is replaced, and the server keeps answering;
 *  - SIGTERM stops the workers, then the primary, with exit code 0;
 *  - a worker that cannot start stops the server (exit code 1) instead of being forked for ever;
 *  - /healthz answers for the whole server (the primary sums its workers' counters), and so does
 *    the primary's `stopped` line;
 *  - `--workers` / TROUPE_WORKERS: default 1, the flag over the variable, a bad count one line.
 */
import type { ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { request } from "node:http";
import { createTeamRegistry } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { sha256Hex } from "../src/auth.ts";
import { serveConfig } from "../src/node.ts";
import { tempStore, tinyTeam } from "./fixtures.ts";
import { startApi } from "./processes.ts";

const tmp = tempStore();
const KEY = "cluster-key-0000000001";
const LIMITED_KEY = "cluster-key-limited-02";
const LIMIT = 25;
let primary: ChildProcess;
let url: string;
/** Everything the primary and its workers wrote on stderr (JSON log lines). */
let log = "";
const logged = (message: string) => log.split(`"message":"${message}"`).length - 1;

/** The primary's children that run the server: the workers' pids (tsx's esbuild child is not one). */
const workerPids = (pid: number): number[] => {
  try {
    return execFileSync("pgrep", ["-P", String(pid), "-f", "apps/api/src/node.ts"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map(Number);
  } catch {
    return []; // pgrep exits 1 when there is none
  }
};

/**
 * One request on a connection of its own (no keep-alive), so that the cluster's round-robin hands
 * consecutive requests to different workers.
 */
function send(
  method: "GET" | "POST",
  path: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method,
        agent: false,
        headers: { "content-type": "application/json", authorization: `Bearer ${key}`, connection: "close" },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const solveBody = (seed: number) => ({ team: "tiny", input: { generate: { seed } }, options: { seed } });

beforeAll(async () => {
  await createTeamRegistry(tmp.store).publish(await tinyTeam("tiny"));
  const keys = JSON.stringify([
    { id: "main", sha256: await sha256Hex(KEY) },
    { id: "limited", sha256: await sha256Hex(LIMITED_KEY), ratePerMinute: LIMIT },
  ]);
  const api = startApi(["--port", "0", "--store", `file://${tmp.root}`, "--workers", "2"], {
    TROUPE_API_KEY_HASHES: keys,
  });
  primary = api.child;
  primary.stderr!.on("data", (chunk) => {
    log += chunk.toString();
  });
  url = await api.listening;
}, 120_000);

afterAll(() => {
  if (primary.exitCode === null) {
    for (const pid of workerPids(primary.pid!)) process.kill(pid, "SIGKILL");
    primary.kill("SIGKILL");
  }
  tmp.cleanup();
});

describe("api serve --workers 2", () => {
  it("answers concurrent solves, each answer the single server's", async () => {
    expect(workerPids(primary.pid!)).toHaveLength(2);
    const single = createApp({
      registry: createTeamRegistry(tmp.store),
      backend: createOnnxBackend({ batching: true }),
    });
    const seeds = [1, 2, 3, 4, 5, 6, 7, 8];
    const answers = await Promise.all(seeds.map((seed) => send("POST", "/v1/solve", KEY, solveBody(seed))));
    for (const [i, seed] of seeds.entries()) {
      expect(answers[i]!.status).toBe(200);
      const expected = await single.request("/v1/solve", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(solveBody(seed)),
      });
      const { latencyMs: _a, turns: got, ...rest } = JSON.parse(answers[i]!.body);
      const { latencyMs: _b, turns: want, ...wantRest } = await expected.json();
      expect(rest).toEqual(wantRest);
      // Turn timings differ; everything else is the same.
      const strip = (turns: { ms: number }[]) => turns.map(({ ms: _, ...t }) => t);
      expect(strip(got)).toEqual(strip(want));
    }
  }, 60_000);

  it("answers /healthz for the whole server: every worker's counters and CPU, summed by the primary", async () => {
    // Fresh connections: round-robin gives the two requests to different workers.
    const first = JSON.parse((await send("GET", "/healthz", KEY)).body);
    const second = JSON.parse((await send("GET", "/healthz", KEY)).body);
    expect(first.ok).toBe(true);
    // The 8 solves above, whichever worker ran them, and each health request counted as it arrives.
    expect(first.stats).toMatchObject({ processes: 3, solves: 8, requests: 9, byStatus: { 200: 8 } });
    expect(second.stats).toMatchObject({ processes: 3, solves: 8, requests: 10, byStatus: { 200: 9 } });
    // The model's forward passes are counted, inside the processes' CPU time.
    expect(first.stats.ortRuns).toBeGreaterThan(0);
    expect(first.stats.ortCpuMs).toBeGreaterThan(0);
    expect(first.stats.cpuMs).toBeGreaterThan(first.stats.ortCpuMs);
    expect(second.stats.cpuMs).toBeGreaterThanOrEqual(first.stats.cpuMs);
  }, 60_000);

  it("holds a key's rate limit across the workers: exactly LIMIT answered, the rest 429", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await send("GET", "/v1/teams", LIMITED_KEY)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40 - LIMIT);
  }, 60_000);

  it("replaces a worker that dies, and keeps answering", async () => {
    const [victim, survivor] = workerPids(primary.pid!);
    const started = logged("worker listening");
    process.kill(victim!, "SIGKILL");
    for (let i = 0; i < 200 && logged("worker listening") === started; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(log).toContain('"message":"worker exited; starting another"');
    expect(logged("worker listening")).toBe(started + 1);
    const pids = workerPids(primary.pid!);
    expect(pids).toHaveLength(2);
    expect(pids).toContain(survivor);
    expect(pids).not.toContain(victim);
    const answers = await Promise.all(
      [1, 2, 3, 4].map((seed) => send("POST", "/v1/solve", KEY, solveBody(seed))),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
  }, 60_000);

  it("stops on SIGTERM: the workers, then the primary, exit code 0", async () => {
    const pids = workerPids(primary.pid!);
    const exited = new Promise<number | null>((done) => primary.once("exit", done));
    primary.kill("SIGTERM");
    expect(await exited).toBe(0);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow(); // gone
    expect(log).toContain('"message":"stopped","workers":2');
    // Each worker logs its counters when it stops: both served (round-robin over fresh connections).
    const served = log
      .split("\n")
      .filter((line) => line.includes('"message":"stopped","stats"'))
      .map((line) => JSON.parse(line).stats.requests as number);
    expect(served, log).toHaveLength(2);
    for (const requests of served) expect(requests).toBeGreaterThan(0);
    // The primary's line sums what the two workers handed it as they stopped (the one killed above
    // handed nothing), and its own CPU time.
    const whole = JSON.parse(
      log.split("\n").find((line) => line.includes('"message":"stopped","workers":2'))!,
    );
    expect(whole.stats.processes).toBe(3);
    expect(whole.stats.requests).toBe(served[0]! + served[1]!);
  }, 60_000);
});

describe("api serve --workers: a worker that cannot start", () => {
  it("stops the server with exit code 1 (not forked again and again)", async () => {
    // The primary's checks pass (a loopback address, a readable store); the workers' listen fails:
    // the port is taken by another server.
    const holder = startApi(["--port", "0", "--store", `file://${tmp.root}`]);
    const taken = new URL(await holder.listening).port;
    try {
      const { child, listening } = startApi([
        "--port",
        taken,
        "--store",
        `file://${tmp.root}`,
        "--workers",
        "2",
      ]);
      let log = "";
      child.stderr!.on("data", (chunk) => {
        log += chunk.toString();
      });
      const code = await new Promise<number | null>((done) => child.once("exit", done));
      await expect(listening).rejects.toThrow(/api exited/);
      expect(code).toBe(1);
      expect(log).toContain("a worker exited before it listened; stopping");
    } finally {
      const exited = new Promise((done) => holder.child.once("exit", done));
      holder.child.kill("SIGTERM");
      await exited;
    }
  }, 60_000);
});

describe("--workers / TROUPE_WORKERS", () => {
  it("defaults to 1, takes the flag over the variable, and names a bad count", () => {
    expect(serveConfig([], {}).workers).toBe(1);
    expect(serveConfig([], { TROUPE_WORKERS: "3" }).workers).toBe(3);
    expect(serveConfig(["--workers", "2"], { TROUPE_WORKERS: "3" }).workers).toBe(2);
    expect(() => serveConfig(["--workers", "0"], {})).toThrow("workers: --workers must be > 0");
    expect(() => serveConfig([], { TROUPE_WORKERS: "1.5" })).toThrow("workers: --workers must be an integer");
    expect(() => serveConfig(["--workers", "two"], {})).toThrow("workers: --workers must be a number");
  });

  it("--ort-threads / TROUPE_ORT_THREADS: the flag over the variable, unset by default", () => {
    expect(serveConfig([], {}).ortThreads).toBeUndefined();
    expect(serveConfig([], { TROUPE_ORT_THREADS: "2" }).ortThreads).toBe(2);
    expect(serveConfig(["--ort-threads", "3"], { TROUPE_ORT_THREADS: "2" }).ortThreads).toBe(3);
    expect(() => serveConfig(["--ort-threads", "0"], {})).toThrow("ortThreads: --ort-threads must be > 0");
  });
});
