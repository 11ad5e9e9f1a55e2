/**
 * `nx run api:bench`: load on the Node server (src/node.ts in a child process, ONNX backend) with a
 * tiny published team, driven by autocannon over 127.0.0.1: two servers, continuous batching off (one
 * FIFO slot for every turn) and on, each scenario run on one then the other. One JSON line per
 * scenario and mode:
 *   - solve-1 / solve / solve-200: POST /v1/solve (JSON) with 1, BENCH_CONNECTIONS (10) and 200
 *     connections (BENCH_SOLVES (300) requests; 1,000 at 200 connections, 100 at 1), and
 *     solve-200-again, the same load once more: the server's RSS must not grow in it;
 *   - rate-limited (batching on only): GET /v1/teams on a key limited to 120/min, 50 connections —
 *     429s counted apart from errors (aim: none 5xx, no connection errors).
 * Fields: latency p50/p99/mean (ms), per-turn p50 (p50 ÷ agent turns per solve; aim < 50 ms at
 * 200 connections), req/s, errors (connection errors + timeouts), non2xx, 429s, 5xx, server RSS
 * before/after (MiB). Then a markdown table of both modes (docs/serving.md keeps one), with the
 * server's RSS after warm-up and at the end, and the load average. BENCH_MODES=on (or off) runs one
 * mode. Every scenario is bounded by a request count and a wall-clock limit. The machine is
 * shared: numbers are noisy, compare runs on the same machine only.
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
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
const MODES = (process.env.BENCH_MODES ?? "off,on").split(",") as ("on" | "off")[];

interface Line {
  scenario: string;
  batching: "on" | "off";
  connections: number | undefined;
  reqPerSec: number;
  latencyMs: { p50: number; p99: number; mean: number };
  perTurnP50Ms?: number;
  non2xx: number;
  status5xx: number;
  rssMiB: { before: number | null; after: number | null };
}

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
  batching: "on" | "off",
  pid: number,
  options: autocannon.Options,
  turnsPerSolve?: number,
): Promise<Line> {
  const rssBefore = rssMiB(pid);
  const result = await autocannon({ ...options, duration: MAX_SECONDS });
  const statuses = result.statusCodeStats ?? {};
  const count = (pred: (code: number) => boolean) =>
    Object.entries(statuses)
      .filter(([code]) => pred(Number(code)))
      .reduce((sum, [, s]) => sum + (s.count ?? 0), 0);
  const line = {
    scenario: name,
    batching,
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
  return line;
}

const fmt = (ms: number) =>
  ms >= 100 ? Math.round(ms).toLocaleString("en") : String(Math.round(ms * 10) / 10);

/** The table of docs/serving.md: per connection count, both modes side by side. */
const loads = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(", ");

function table(lines: readonly Line[], rss: Record<string, string>, loadAtStart: string): string {
  const rows = [
    "| connections | batching | solve p50 | per-turn p50 | req/s | non-2xx | server RSS before → after |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const l of lines) {
    if (l.perTurnP50Ms === undefined) continue;
    const again = l.scenario.endsWith("-again") ? " (again)" : "";
    rows.push(
      `| ${l.connections}${again} | ${l.batching} | ${fmt(l.latencyMs.p50)} ms | ${fmt(l.perTurnP50Ms)} ms | ` +
        `${Math.round(l.reqPerSec)} | ${l.non2xx} | ${l.rssMiB.before} → ${l.rssMiB.after} MiB |`,
    );
  }
  return `${rows.join("\n")}\n\nserver RSS (MiB, after warm-up → end): ${Object.entries(rss)
    .map(([mode, r]) => `${mode} ${r}`)
    .join("; ")}; load average (1, 5, 15 min) at the start: ${loadAtStart}, at the end: ${loads()}\n`;
}

async function main(): Promise<void> {
  const tmp = tempStore();
  const registry = createTeamRegistry(tmp.store);
  await registry.publish(await tinyTeam("tiny"));
  const keys = JSON.stringify([
    { id: "bench", sha256: await sha256Hex(KEY) },
    { id: "limited", sha256: await sha256Hex(LIMITED_KEY), ratePerMinute: 120 },
  ]);
  const loadAtStart = loads();
  const lines: Line[] = [];
  const rss: Record<string, string> = {};
  // Both servers run side by side and each scenario runs on one then the other, so a change in
  // the machine's load (it is shared) falls on both modes alike.
  const servers = MODES.map((batching) => ({
    batching,
    ...startApi(["--port", "0"], {
      TROUPE_STORE: `file://${tmp.root}`,
      TROUPE_API_KEY_HASHES: keys,
      TROUPE_RATE_PER_MINUTE: "1000000",
      TROUPE_BATCHING: batching,
    }),
  }));
  try {
    const headers = { "content-type": "application/json", authorization: `Bearer ${KEY}` };
    const body = JSON.stringify({
      team: "tiny",
      input: { generate: { seed: 1 } },
      options: { seed: 1, transcript: true },
    });
    const ready = [];
    for (const server of servers) {
      const url = await server.listening;
      // Warm-up (loads the team's engines) and the number of agent turns of this solve.
      const warm = await (await fetch(`${url}/v1/solve`, { method: "POST", headers, body })).json();
      ready.push({ ...server, url, pid: server.child.pid!, turns: warm.turns.length as number });
      rss[server.batching] = `${rssMiB(server.child.pid!)}`;
    }
    const amounts: [string, number, number][] = [
      ["solve-1", 1, 100],
      ["solve", CONNECTIONS, SOLVES],
      ["solve-200", 200, Math.max(SOLVES, 1000)],
      // Again: the server's RSS must stay flat once it has seen the load (no growth per request).
      ["solve-200-again", 200, Math.max(SOLVES, 1000)],
    ];
    for (const [name, connections, amount] of amounts) {
      for (const { batching, url, pid, turns } of ready) {
        const options = {
          url: `${url}/v1/solve`,
          method: "POST" as const,
          headers,
          body,
          connections,
          amount,
        };
        lines.push(await scenario(name, batching, pid, options, turns));
      }
    }
    for (const { batching, url, pid } of ready) {
      if (batching !== "on") continue;
      await scenario("rate-limited", batching, pid, {
        url: `${url}/v1/teams`,
        headers: { authorization: `Bearer ${LIMITED_KEY}` },
        connections: 50,
        amount: 2000,
      });
    }
    for (const { batching, pid } of ready) rss[batching] = `${rss[batching]} → ${rssMiB(pid)}`;
  } finally {
    for (const { child } of servers) {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      await exited;
    }
    tmp.cleanup();
  }
  process.stdout.write(`\n${table(lines, rss, loadAtStart)}`);
}

await main();
