/**
 * `nx run api:bench`: load on the Node server (src/node.ts in a child process, ONNX backend) with a
 * tiny published team, driven by autocannon over 127.0.0.1. One JSON line per scenario:
 *   - solve:        POST /v1/solve (JSON), BENCH_CONNECTIONS (10) connections, BENCH_SOLVES (300) requests;
 *   - solve-200:    the same with 200 connections (aim: 0 errors; queueing shows up as latency);
 *   - rate-limited: GET /v1/teams on a key limited to 120/min, 50 connections — 429s counted apart
 *                   from errors (aim: none 5xx, no connection errors).
 * Fields: latency p50/p99/mean (ms), per-turn p50 (p50 ÷ mean agent turns per solve; aim < 50 ms),
 * req/s, errors (connection errors + timeouts), non2xx, 429s, 5xx, server RSS before/after (MiB).
 * Every scenario is bounded by a request count and a wall-clock limit. The machine is shared:
 * numbers are noisy, compare runs on the same machine only.
 */
import { readFileSync } from "node:fs";
import { createTeamRegistry } from "@troupe/teams";
import autocannon from "autocannon";
import { sha256Hex } from "../src/auth.ts";
import { tempStore, tinyTeam } from "../test/fixtures.ts";
import { startApi } from "../test/processes.ts";

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const SOLVES = Number(process.env.BENCH_SOLVES ?? 300);
/** Wall-clock bound of each scenario (seconds). */
const MAX_SECONDS = Number(process.env.BENCH_MAX_SECONDS ?? 60);
const KEY = "bench-key-000000000001";
const LIMITED_KEY = "bench-key-limited-0002";

function rssMiB(pid: number): number | null {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : null;
  } catch {
    return null; // not Linux
  }
}

async function scenario(
  name: string,
  pid: number,
  options: autocannon.Options,
  turnsPerSolve?: number,
): Promise<void> {
  const rssBefore = rssMiB(pid);
  const result = await autocannon({ ...options, duration: MAX_SECONDS });
  const statuses = result.statusCodeStats ?? {};
  const count = (pred: (code: number) => boolean) =>
    Object.entries(statuses)
      .filter(([code]) => pred(Number(code)))
      .reduce((sum, [, s]) => sum + (s.count ?? 0), 0);
  const line = {
    scenario: name,
    connections: options.connections,
    requests: result.requests.total,
    seconds: result.duration,
    reqPerSec: Math.round(result.requests.average * 10) / 10,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, mean: result.latency.mean },
    ...(turnsPerSolve
      ? { turnsPerSolve, perTurnP50Ms: Math.round((result.latency.p50 / turnsPerSolve) * 10) / 10 }
      : {}),
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    status429: count((c) => c === 429),
    status5xx: count((c) => c >= 500),
    rssMiB: { before: rssBefore, after: rssMiB(pid) },
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main(): Promise<void> {
  const tmp = tempStore();
  const registry = createTeamRegistry(tmp.store);
  await registry.publish(await tinyTeam("tiny"));
  const keys = JSON.stringify([
    { id: "bench", sha256: await sha256Hex(KEY) },
    { id: "limited", sha256: await sha256Hex(LIMITED_KEY), ratePerMinute: 120 },
  ]);
  const { child, listening } = startApi(["--port", "0"], {
    TROUPE_STORE: `file://${tmp.root}`,
    TROUPE_API_KEY_HASHES: keys,
    TROUPE_RATE_PER_MINUTE: "1000000",
  });
  const url = await listening;
  try {
    const headers = { "content-type": "application/json", authorization: `Bearer ${KEY}` };
    const body = JSON.stringify({
      team: "tiny",
      input: { generate: { seed: 1 } },
      options: { seed: 1, transcript: true },
    });
    // Warm-up (loads the team's engines) and the number of agent turns of this solve.
    const warm = await (await fetch(`${url}/v1/solve`, { method: "POST", headers, body })).json();
    const turns: number = warm.turns.length;
    const solveOptions = { url: `${url}/v1/solve`, method: "POST" as const, headers, body };
    await scenario("solve-1", child.pid!, { ...solveOptions, connections: 1, amount: 100 }, turns);
    await scenario("solve", child.pid!, { ...solveOptions, connections: CONNECTIONS, amount: SOLVES }, turns);
    await scenario(
      "solve-200",
      child.pid!,
      { ...solveOptions, connections: 200, amount: Math.max(SOLVES, 400) },
      turns,
    );
    await scenario("rate-limited", child.pid!, {
      url: `${url}/v1/teams`,
      headers: { authorization: `Bearer ${LIMITED_KEY}` },
      connections: 50,
      amount: 2000,
    });
  } finally {
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGTERM");
    await exited;
    tmp.cleanup();
  }
}

await main();
