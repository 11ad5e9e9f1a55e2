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
 * before/after (MiB; the server's whole process tree: primary and workers), and what a solve
 * costs: `cpuMsPerSolve`, the CPU time (user + system) of the server's whole process tree over the
 * scenario ÷ its 2xx answers, read from /proc, and `ortShare`, the part of it spent inside ONNX
 * Runtime's session runs (the server's /healthz `stats.ortCpuMs`, summed over its workers). Then a
 * markdown table of the modes (docs/serving.md keeps one), with the servers' RSS after warm-up and
 * at the end, and the load average. BENCH_MODES picks the modes (default `off,on,on:2`; `on:N` is
 * batching with N workers). Every scenario is bounded by a request count and a wall-clock limit.
 *
 * BENCH_COMPARE=<another checkout of this repository> also starts that checkout's servers (its own
 * src/node.ts, e.g. a `git worktree` of the commit before) for every mode, labelled `<mode>@before`,
 * and runs each scenario on them in turn with this checkout's: a before/after from one run, under
 * the same machine load. (A checkout without /healthz stats gets no ortShare.)
 *
 * Then the embedded Worker (infra/workers/wrangler.embedded.toml) in local workerd, with the same
 * team in its local R2 (BENCH_WORKERD=0 skips it): the CPU time of the workerd process for the
 * first solve of a fresh isolate (the team read from R2 and its ONNX sessions built) and per warm
 * solve (BENCH_WORKERD_SOLVES, 100, one after the other), and their wall-clock times.
 *
 * The machine is shared: numbers are noisy, compare runs on the same machine only.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createTeamRegistry } from "@troupe/teams";
import autocannon from "autocannon";
import { getPlatformProxy } from "wrangler";
import { sha256Hex } from "../src/auth.ts";
import { type R2BucketBinding, R2Store } from "../src/worker/r2-store.ts";
import { tempStore, tinyTeam } from "../test/fixtures.ts";
import { startLocalWorker } from "../test/local-worker.ts";
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
/** Another checkout whose servers run beside this one's (the before of a before/after). */
const COMPARE = process.env.BENCH_COMPARE;
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
  cpuMsPerSolve: number | null;
  ortShare: number | null;
}

/** The fields after a /proc/<pid>/stat's command name (which may hold spaces): state, ppid, …. */
const statFields = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
};

/** A process and all its descendants (a cluster's primary and workers; wrangler's workerd). */
function processTree(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      parents.set(Number(entry), Number(statFields(Number(entry))[1]));
    } catch {
      // the process ended while we looked
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++)
    for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
  return tree;
}

/** Resident memory of a process tree, MiB. */
function rssMiB(pid: number): number | null {
  try {
    let kb = 0;
    for (const p of processTree(pid)) {
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

/** Clock ticks per second of /proc's times (`getconf CLK_TCK`; 100 on Linux). */
const CLOCK_TICKS = 100;

/** CPU time (user + system) of processes so far, ms: utime and stime are /proc/<pid>/stat's fields 14 and 15. */
function cpuMs(pids: readonly number[]): number | null {
  try {
    let ticks = 0;
    for (const p of pids) {
      try {
        const fields = statFields(p);
        ticks += Number(fields[11]) + Number(fields[12]);
      } catch {
        // ended
      }
    }
    return (ticks * 1000) / CLOCK_TICKS;
  } catch {
    return null; // not Linux
  }
}

/** ONNX Runtime's CPU ms so far in a server (/healthz stats, all its processes); null without them. */
async function ortCpuMs(url: string): Promise<number | null> {
  const health = (await (await fetch(`${url}/healthz`)).json()) as { stats?: { ortCpuMs: number } };
  return health.stats?.ortCpuMs ?? null;
}

async function scenario(
  name: string,
  mode: string,
  pid: number,
  options: autocannon.Options,
  turnsPerSolve?: number,
): Promise<Line> {
  const rssBefore = rssMiB(pid);
  const server = new URL(options.url!).origin;
  // The tree is listed once: a worker replaced during the scenario would be missed, and is an error anyway.
  const tree = processTree(pid);
  const ortBefore = await ortCpuMs(server);
  const cpuBefore = cpuMs(tree);
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
  const cpuAfter = cpuMs(tree);
  const ortAfter = await ortCpuMs(server);
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
    // (Solve scenarios only: the rate-limit scenario's answers are mostly 429s.)
    ...(turnsPerSolve
      ? solveCost(cpuBefore, cpuAfter, ortBefore, ortAfter, result.requests.total - result.non2xx)
      : { cpuMsPerSolve: null, ortShare: null }),
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  return line;
}

/** CPU ms per answered request, and ONNX Runtime's part of it. */
function solveCost(
  cpuBefore: number | null,
  cpuAfter: number | null,
  ortBefore: number | null,
  ortAfter: number | null,
  answered: number,
): { cpuMsPerSolve: number | null; ortShare: number | null } {
  if (cpuBefore === null || cpuAfter === null || answered === 0)
    return { cpuMsPerSolve: null, ortShare: null };
  const cpu = cpuAfter - cpuBefore;
  return {
    cpuMsPerSolve: Math.round((cpu / answered) * 100) / 100,
    ortShare:
      ortBefore === null || ortAfter === null || cpu <= 0
        ? null
        : Math.round(((ortAfter - ortBefore) / cpu) * 1000) / 1000,
  };
}

const fmt = (ms: number) =>
  ms >= 100 ? Math.round(ms).toLocaleString("en") : String(Math.round(ms * 10) / 10);

/** The table of docs/serving.md: per connection count, both modes side by side. */
const loads = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(", ");

/** "on:2" → "on, 2 workers"; "on@before" → "on (before)". */
const modeLabel = (mode: string) => {
  const [settings, checkout] = mode.split("@");
  const [batching, workers] = settings!.split(":");
  return `${workers ? `${batching}, ${workers} workers` : batching!}${checkout ? ` (${checkout})` : ""}`;
};

function table(lines: readonly Line[], rss: Record<string, string>, loadAtStart: string): string {
  const rows = [
    "| connections | batching | solve p50 | per-turn p50 | req/s | CPU per solve | ONNX Runtime's share | non-2xx | server RSS before → after |",
    "|---|---|---|---|---|---|---|---|---|",
  ];
  for (const l of lines) {
    if (l.perTurnP50Ms === undefined) continue;
    const again = l.scenario.endsWith("-again") ? " (again)" : "";
    rows.push(
      `| ${l.connections}${again} | ${modeLabel(l.mode)} | ${fmt(l.latencyMs.p50)} ms | ${fmt(l.perTurnP50Ms)} ms | ` +
        `${Math.round(l.reqPerSec)} | ${l.cpuMsPerSolve === null ? "-" : `${l.cpuMsPerSolve.toFixed(2)} ms`} | ` +
        `${l.ortShare === null ? "-" : `${Math.round(l.ortShare * 100)}%`} | ${l.non2xx} | ${l.rssMiB.before} → ${l.rssMiB.after} MiB |`,
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
  const env = (mode: Mode) => ({
    TROUPE_STORE: `file://${tmp.root}`,
    TROUPE_API_KEY_HASHES: keys,
    TROUPE_RATE_PER_MINUTE: "1000000",
    TROUPE_BATCHING: mode.batching,
  });
  const args = (mode: Mode) => ["--port", "0", "--workers", String(mode.workers)];
  const servers = MODES.flatMap((mode) => [
    { mode, ...startApi(args(mode), env(mode)) },
    ...(COMPARE
      ? [{ mode: { ...mode, name: `${mode.name}@before` }, ...startApi(args(mode), env(mode), COMPARE) }]
      : []),
  ]);
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
  }
  process.stdout.write(`\n${table(lines, rss, loadAtStart)}`);
  try {
    if (process.env.BENCH_WORKERD !== "0") await workerd(await tinyTeam("tiny"));
  } finally {
    tmp.cleanup();
  }
}

const WORKERD_CONFIG = new URL("../../../infra/workers/wrangler.embedded.toml", import.meta.url).pathname;
const WORKERD_SOLVES = Number(process.env.BENCH_WORKERD_SOLVES ?? 100);

/**
 * The embedded Worker in local workerd: the team published into its local R2, then a fresh isolate's
 * first solve and WORKERD_SOLVES warm ones, each costed by the workerd process's CPU time.
 */
async function workerd(team: Awaited<ReturnType<typeof tinyTeam>>): Promise<void> {
  process.env.WRANGLER_BUILD_CONDITIONS = "@troupe/source,workerd,worker,browser";
  process.env.WRANGLER_SEND_METRICS = "false";
  const persist = mkdtempSync(join(tmpdir(), "troupe-bench-workerd-"));
  try {
    const proxy = await getPlatformProxy<{ TEAMS: R2BucketBinding }>({
      configPath: WORKERD_CONFIG,
      persist: { path: join(persist, "v3") },
    });
    try {
      await createTeamRegistry(new R2Store(proxy.env.TEAMS)).publish(team);
    } finally {
      await proxy.dispose();
    }
    const worker = await startLocalWorker(WORKERD_CONFIG, persist, {
      TROUPE_API_KEY_HASHES: await sha256Hex(KEY),
      TROUPE_RATE_PER_MINUTE: "1000000",
    });
    try {
      const url = (await worker.url).origin;
      // The isolate's first request (workerd's own start-up), before any engine.
      if ((await fetch(`${url}/healthz`)).status !== 200) throw new Error("workerd: /healthz failed");
      const workerdPids = processTree(process.pid).filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "workerd";
        } catch {
          return false;
        }
      });
      if (workerdPids.length === 0) throw new Error("workerd: no workerd process under this one");
      const pids = workerdPids.flatMap((pid) => processTree(pid));
      const request = {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ team: "tiny", input: { generate: { seed: 1 } }, options: { seed: 1 } }),
      };
      const timed = async (solves: number) => {
        const cpuBefore = cpuMs(pids)!;
        const started = performance.now();
        for (let i = 0; i < solves; i++) {
          const response = await fetch(`${url}/v1/solve`, request);
          if (response.status !== 200)
            throw new Error(`workerd: /v1/solve ${response.status}: ${await response.text()}`);
          await response.arrayBuffer();
        }
        return {
          cpuMsPerSolve: Math.round(((cpuMs(pids)! - cpuBefore) / solves) * 100) / 100,
          wallMsPerSolve: Math.round(((performance.now() - started) / solves) * 10) / 10,
        };
      };
      const first = await timed(1);
      const warm = await timed(WORKERD_SOLVES);
      const line = {
        scenario: "workerd-embedded",
        firstSolve: first,
        warm: { solves: WORKERD_SOLVES, ...warm },
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
      process.stdout.write(
        `\nembedded Worker, local workerd: first solve of an isolate ${first.cpuMsPerSolve} ms CPU ` +
          `(${first.wallMsPerSolve} ms); warm ${warm.cpuMsPerSolve} ms CPU per solve (${warm.wallMsPerSolve} ms each, ` +
          `${WORKERD_SOLVES} one after the other); load average at the end: ${loads()}\n`,
      );
    } finally {
      await worker.dispose();
    }
  } finally {
    rmSync(persist, { recursive: true, force: true });
  }
}

await main();
