/**
 * `nx run api:bench`: load on the Node server (src/node.ts in child processes, ONNX backend) with a
 * tiny published team, driven by autocannon over 127.0.0.1: three servers — continuous batching off
 * (one FIFO slot for every turn), on, and on with two worker processes (`--workers 2`) — each
 * scenario run on one after the other. One JSON line per scenario and mode:
 *   - solve-1 / solve / solve-200: POST /v1/solve (JSON) with 1, BENCH_CONNECTIONS (10) and 200
 *     connections (BENCH_SOLVES (300) requests; 3,000 at 200 connections, so that a run lasts seconds even batched; 500 at 1), and
 *     solve-200-again, the same load once more: the server's RSS must not grow in it;
 *   - rate-limited (batching on only): GET /v1/teams on a key limited to 120/min, 50 connections —
 *     429s counted apart from errors (aim: none 5xx, no connection errors).
 * Fields: latency p50/p99/mean (ms), per-turn p50 (p50 ÷ agent turns per solve; aim < 50 ms at
 * 200 connections), req/s, errors (connection errors + timeouts), non2xx, 429s, 5xx, server RSS
 * before/after (MiB; the server's whole process tree: primary and workers). Then a markdown table
 * of the modes (docs/serving.md keeps one), with the servers' RSS after warm-up and at the end, and
 * the load average. BENCH_MODES picks the modes (default `off,on,on:2`; `on:N` is batching with N
 * workers). Every scenario is bounded by a request count and a wall-clock limit. The machine is
 * shared: numbers are noisy, compare runs on the same machine only.
 */
import { readdirSync, readFileSync } from "node:fs";
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
/** A server's settings: "off" (the FIFO slot), "on" (continuous batching) or "on:N" (and N workers). */
interface Mode {
  readonly name: string;
  readonly batching: "on" | "off";
  readonly workers: number;
}
const MODES: Mode[] = (process.env.BENCH_MODES ?? "off,on,on:2").split(",").map((name) => {
  const [batching, workers = "1"] = name.split(":");
  if ((batching !== "on" && batching !== "off") || !(Number(workers) >= 1))
    throw new Error(`BENCH_MODES: "${name}" is not off, on or on:<workers>`);
  return { name, batching, workers: Number(workers) };
});

interface Line {
  scenario: string;
  mode: string;
  connections: number | undefined;
  reqPerSec: number;
  latencyMs: { p50: number; p99: number; mean: number };
  perTurnP50Ms?: number;
  non2xx: number;
  status5xx: number;
  rssMiB: { before: number | null; after: number | null };
}

/** Resident memory of a process and all its descendants (a cluster's primary and workers), MiB. */
function rssMiB(pid: number): number | null {
  try {
    const parents = new Map<number, number>();
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after the last ")".
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
      } catch {
        // the process ended while we looked
      }
    }
    const tree = [pid];
    for (let i = 0; i < tree.length; i++)
      for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
    let kb = 0;
    for (const p of tree) {
      try {
        kb += Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0);
      } catch {
        // ended
      }
    }
    return Math.round(kb / 1024);
  } catch {
    return null; // not Linux
  }
}

async function scenario(
  name: string,
  mode: string,
  pid: number,
  options: autocannon.Options,
  turnsPerSolve?: number,
): Promise<Line> {
  const rssBefore = rssMiB(pid);
  // autocannon ends a run at its next sampling tick: ticks of 100 ms (not 1 s) keep the measured
  // duration, and so req/s, within 0.1 s of the last answer.
  // autocannon applies `duration` only to runs without an `amount`: the wall-clock bound is ours.
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon({ ...options, sampleInt: 100 }, (error, done) => {
      clearTimeout(bound);
      if (error) reject(error);
      else resolve(done);
    });
    const bound = setTimeout(() => run.stop(), MAX_SECONDS * 1000);
  });
  const statuses = result.statusCodeStats ?? {};
  const count = (pred: (code: number) => boolean) =>
    Object.entries(statuses)
      .filter(([code]) => pred(Number(code)))
      .reduce((sum, [, s]) => sum + (s.count ?? 0), 0);
  const line = {
    scenario: name,
    mode,
    connections: options.connections,
    requests: result.requests.total,
    seconds: result.duration,
    // Requests over the elapsed time (autocannon's own average is over its sampling ticks).
    reqPerSec: Math.round((result.requests.total / result.duration) * 10) / 10,
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

/** "on:2" → "on, 2 workers". */
const modeLabel = (mode: string) => {
  const [batching, workers] = mode.split(":");
  return workers ? `${batching}, ${workers} workers` : batching!;
};

function table(lines: readonly Line[], rss: Record<string, string>, loadAtStart: string): string {
  const rows = [
    "| connections | batching | solve p50 | per-turn p50 | req/s | non-2xx | server RSS before → after |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const l of lines) {
    if (l.perTurnP50Ms === undefined) continue;
    const again = l.scenario.endsWith("-again") ? " (again)" : "";
    rows.push(
      `| ${l.connections}${again} | ${modeLabel(l.mode)} | ${fmt(l.latencyMs.p50)} ms | ${fmt(l.perTurnP50Ms)} ms | ` +
        `${Math.round(l.reqPerSec)} | ${l.non2xx} | ${l.rssMiB.before} → ${l.rssMiB.after} MiB |`,
    );
  }
  return `${rows.join("\n")}\n\nserver RSS (MiB, after warm-up → end): ${Object.entries(rss)
    .map(([mode, r]) => `${modeLabel(mode)} ${r}`)
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
  // The servers run side by side and each scenario runs on one after the other, so a change in
  // the machine's load (it is shared) falls on every mode alike.
  const servers = MODES.map((mode) => ({
    mode,
    ...startApi(["--port", "0", "--workers", String(mode.workers)], {
      TROUPE_STORE: `file://${tmp.root}`,
      TROUPE_API_KEY_HASHES: keys,
      TROUPE_RATE_PER_MINUTE: "1000000",
      TROUPE_BATCHING: mode.batching,
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
      rss[server.mode.name] = `${rssMiB(server.child.pid!)}`;
    }
    const amounts: [string, number, number][] = [
      ["solve-1", 1, 500],
      ["solve", CONNECTIONS, SOLVES],
      ["solve-200", 200, Math.max(SOLVES, 3000)],
      // Again: the server's RSS must stay flat once it has seen the load (no growth per request).
      ["solve-200-again", 200, Math.max(SOLVES, 3000)],
    ];
    for (const [name, connections, amount] of amounts) {
      for (const { mode, url, pid, turns } of ready) {
        const options = {
          url: `${url}/v1/solve`,
          method: "POST" as const,
          headers,
          body,
          connections,
          amount,
        };
        lines.push(await scenario(name, mode.name, pid, options, turns));
      }
    }
    // The rate limit under load, on every batching server (with workers: the primary's buckets).
    for (const { mode, url, pid } of ready) {
      if (mode.batching !== "on") continue;
      await scenario("rate-limited", mode.name, pid, {
        url: `${url}/v1/teams`,
        headers: { authorization: `Bearer ${LIMITED_KEY}` },
        connections: 50,
        amount: 2000,
      });
    }
    for (const { mode, pid } of ready) rss[mode.name] = `${rss[mode.name]} → ${rssMiB(pid)}`;
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
