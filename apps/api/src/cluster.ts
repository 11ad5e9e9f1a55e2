/**
 * `--workers N`: the Node server as N processes on one port (node:cluster). One process runs the
 * app's JavaScript on one thread — HTTP, the episode loop, sampling, the ONNX runs' host side — so
 * a single server stops scaling at about one core, whatever the machine has; N workers use N.
 *
 * The primary serves nothing itself. It forks the workers (the same entry, the same flags), hands
 * them the listening socket (round-robin), holds the rate-limit buckets for all of them (a worker
 * asks it for each request's token over IPC, so a key's limit holds across processes, not per
 * process), replaces a worker that dies while serving, and on SIGTERM/SIGINT stops every worker
 * (each drains its in-flight requests as a single server does) before it exits. It also answers
 * for the whole server: a worker's /healthz asks it, and it sums every worker's stats with its own
 * (and its "stopped" line sums the stats each worker hands it as it stops). Each worker loads
 * its own teams and runs its own continuous batches: N workers hold N copies of a team's weights.
 */
import cluster, { type Worker } from "node:cluster";
import { type Logger, type ServerStats, sumStats } from "./context.ts";
import { type RateDecision, type RateLimiter, TokenBuckets } from "./rate-limit.ts";

interface TakeMessage {
  readonly troupe: "rate-take";
  readonly id: number;
  readonly key: string;
  readonly ratePerMinute: number;
}
interface DecisionMessage {
  readonly troupe: "rate-decision";
  readonly id: number;
  readonly decision: RateDecision;
}

/** Primary → worker: "your stats"; worker → primary: them, or (stopping) its last ones. */
interface StatsQueryMessage {
  readonly troupe: "stats-query";
  readonly id: number;
}
interface StatsReportMessage {
  readonly troupe: "stats-report" | "stats-final";
  readonly id: number;
  readonly stats: ServerStats;
}
/** Worker → primary: "the whole server's stats" (for /healthz); primary → worker: the sum. */
interface StatsAskMessage {
  readonly troupe: "stats-ask";
  readonly id: number;
}
interface StatsAnswerMessage {
  readonly troupe: "stats-answer";
  readonly id: number;
  readonly stats: ServerStats;
}

/** How long the primary waits for a worker's stats before summing without them. */
const STATS_TIMEOUT_MS = 2_000;

/** A process's own stats with its CPU time: what each of a server's processes contributes. */
export function processStats(
  counters: Omit<ServerStats, "processes" | "cpuMs" | "ortRuns" | "ortCpuMs">,
  ort: { ortRuns: number; ortCpuMs: number } = { ortRuns: 0, ortCpuMs: 0 },
): ServerStats {
  const cpu = process.cpuUsage();
  return {
    ...counters,
    byStatus: { ...counters.byStatus },
    processes: 1,
    cpuMs: (cpu.user + cpu.system) / 1000,
    ortRuns: ort.ortRuns,
    ortCpuMs: ort.ortCpuMs,
  };
}

/** A process that counts nothing but its CPU time (the primary). */
const primaryOwnStats = () =>
  processStats({ requests: 0, byStatus: {}, rateLimited: 0, solves: 0, inFlightSolves: 0, clientAborts: 0 });

/**
 * In a worker: answers the primary's stats queries with `local()`, and gives `whole()`, the whole
 * server's stats (asked of the primary), and `final()`, which hands the primary this worker's last
 * stats as it stops (the primary's own "stopped" line sums them).
 */
export function workerStats(local: () => ServerStats) {
  const asked = new Map<number, (stats: ServerStats) => void>();
  let next = 0;
  process.on("message", (message: unknown) => {
    if (isMessage<StatsQueryMessage>(message, "stats-query")) {
      const report: StatsReportMessage = { troupe: "stats-report", id: message.id, stats: local() };
      if (process.connected) process.send!(report);
    } else if (isMessage<StatsAnswerMessage>(message, "stats-answer")) {
      asked.get(message.id)?.(message.stats);
      asked.delete(message.id);
    }
  });
  return {
    whole(): Promise<ServerStats> {
      const id = next++;
      return new Promise<ServerStats>((resolve, reject) => {
        asked.set(id, resolve);
        const ask: StatsAskMessage = { troupe: "stats-ask", id };
        process.send!(ask, undefined, undefined, (error) => {
          if (!error) return;
          asked.delete(id);
          reject(new Error(`stats: the cluster's primary is gone (${error.message})`));
        });
      });
    },
    final(): Promise<void> {
      if (!process.connected) return Promise.resolve();
      const report: StatsReportMessage = { troupe: "stats-final", id: -1, stats: local() };
      return new Promise<void>((done) => process.send!(report, undefined, undefined, () => done()));
    },
  };
}

/** The URL a server on `host` (an IPv6 address in brackets) and `port` answers at. */
export const httpUrl = (host: string, port: number) =>
  `http://${host.includes(":") ? `[${host}]` : host}:${port}`;

const isMessage = <T extends { troupe: string }>(value: unknown, kind: T["troupe"]): value is T =>
  typeof value === "object" && value !== null && (value as { troupe?: unknown }).troupe === kind;

/** In a worker: the rate limiter whose buckets are the primary's (one IPC round trip per request). */
export function primaryRateLimiter(): RateLimiter {
  const pending = new Map<number, (decision: RateDecision) => void>();
  let next = 0;
  process.on("message", (message: unknown) => {
    if (!isMessage<DecisionMessage>(message, "rate-decision")) return;
    pending.get(message.id)?.(message.decision);
    pending.delete(message.id);
  });
  return {
    take(key, ratePerMinute) {
      const id = next++;
      return new Promise<RateDecision>((resolve, reject) => {
        pending.set(id, resolve);
        const request: TakeMessage = { troupe: "rate-take", id, key, ratePerMinute };
        process.send!(request, undefined, undefined, (error) => {
          if (!error) return;
          pending.delete(id);
          reject(new Error(`rate limiter: the cluster's primary is gone (${error.message})`));
        });
      });
    },
  };
}

export interface PrimaryOptions {
  readonly workers: number;
  /** For the one "listening" line: the address the workers bind. */
  readonly host: string;
  readonly log: Logger;
  /** How long a stopping worker may take before it is killed (its own grace is shorter). */
  readonly stopTimeoutMs?: number;
}

/**
 * The whole server's stats, gathered by the primary: every live worker's (asked when needed, over
 * IPC), the last ones of the workers that stopped, and the primary's own.
 */
class ServerStatsQueries {
  /** The last stats of each worker that stopped. */
  readonly stopped: ServerStats[] = [];
  /** The queries in flight: id → the reports so far, the workers still to answer. */
  private readonly queries = new Map<
    number,
    { reports: ServerStats[]; waiting: Set<Worker>; done: () => void }
  >();
  private nextQuery = 0;

  constructor(private readonly live: ReadonlySet<Worker>) {}

  /** Asks every live worker; a worker that does not answer within STATS_TIMEOUT_MS is left out. */
  ask(): Promise<ServerStats> {
    const id = this.nextQuery++;
    const waiting = new Set([...this.live].filter((w) => w.isConnected()));
    return new Promise<ServerStats>((resolve) => {
      const reports: ServerStats[] = [];
      const done = () => {
        clearTimeout(timer);
        this.queries.delete(id);
        resolve(sumStats([...reports, ...this.stopped, primaryOwnStats()]));
      };
      const timer = setTimeout(done, STATS_TIMEOUT_MS);
      this.queries.set(id, { reports, waiting, done });
      if (waiting.size === 0) done();
      const query: StatsQueryMessage = { troupe: "stats-query", id };
      for (const worker of waiting) worker.send(query);
    });
  }

  /** A worker's answer to a query. */
  report(worker: Worker, message: StatsReportMessage): void {
    const query = this.queries.get(message.id);
    if (query === undefined || !query.waiting.delete(worker)) return;
    query.reports.push(message.stats);
    if (query.waiting.size === 0) query.done();
  }

  /** A stopping worker's last stats: counted from now on in place of its answers. */
  final(worker: Worker, message: StatsReportMessage): void {
    this.stopped.push(message.stats);
    this.forget(worker);
  }

  /** No query waits for this worker any more. */
  forget(worker: Worker): void {
    for (const query of this.queries.values())
      if (query.waiting.delete(worker) && query.waiting.size === 0) query.done();
  }
}

/**
 * Runs the primary until SIGTERM/SIGINT: resolves 0 once every worker has stopped, or 1 when a
 * worker exits before it ever listened (its error line is on stderr already; forking it again
 * would only repeat it).
 */
export function runPrimary(options: PrimaryOptions): Promise<number> {
  const { workers, log } = options;
  const buckets = new TokenBuckets();
  const live = new Set<Worker>();
  const listened = new WeakSet<Worker>();
  let stopping = false;
  let announced = false;
  let allExited: () => void = () => {};
  const exited = new Promise<void>((done) => {
    allExited = done;
  });
  let exitCode = 0;
  let killer: ReturnType<typeof setTimeout> | undefined;

  const stats = new ServerStatsQueries(live);
  cluster.on("message", (worker, message: unknown) => {
    if (isMessage<StatsReportMessage>(message, "stats-report")) return stats.report(worker, message);
    if (isMessage<StatsReportMessage>(message, "stats-final")) return stats.final(worker, message);
    if (isMessage<StatsAskMessage>(message, "stats-ask")) {
      void stats.ask().then((sum) => {
        const answer: StatsAnswerMessage = { troupe: "stats-answer", id: message.id, stats: sum };
        if (worker.isConnected()) worker.send(answer);
      });
      return;
    }
    if (!isMessage<TakeMessage>(message, "rate-take")) return;
    const reply: DecisionMessage = {
      troupe: "rate-decision",
      id: message.id,
      decision: buckets.take(message.key, message.ratePerMinute),
    };
    if (worker.isConnected()) worker.send(reply);
  });

  const fork = (): void => {
    // One ONNX Runtime thread per worker (unless --ort-threads / TROUPE_ORT_THREADS says): N
    // workers already keep N cores busy, and intra-op threads on top only contend with them
    // (2 workers on 2 cores: ~400 req/s with one thread each, ~370 with two).
    const worker = cluster.fork({ TROUPE_ORT_THREADS: process.env.TROUPE_ORT_THREADS ?? "1" });
    live.add(worker);
    worker.once("listening", (address) => {
      listened.add(worker);
      if (announced || [...live].some((w) => !listened.has(w))) return;
      announced = true;
      log("info", "listening", {
        url: httpUrl(options.host, address.port),
        workers,
        pids: [...live].map((w) => w.process.pid),
      });
    });
    worker.once("exit", (code, signal) => {
      live.delete(worker);
      stats.forget(worker);
      if (stopping) {
        if (live.size === 0) allExited();
        return;
      }
      if (!listened.has(worker)) {
        // A worker that cannot start (its error is on stderr) would fail again: stop everything.
        log("error", "a worker exited before it listened; stopping", { code, signal });
        stop("a worker failed to start", 1);
        return;
      }
      log("warn", "worker exited; starting another", { pid: worker.process.pid, code, signal });
      fork();
    });
  };

  const stop = (reason: string, code: number): void => {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    log("info", "shutting down", { reason, workers: live.size });
    killer = setTimeout(() => {
      for (const worker of live) worker.process.kill("SIGKILL");
    }, options.stopTimeoutMs ?? 15_000);
    if (live.size === 0) allExited();
    for (const worker of live) worker.process.kill("SIGTERM");
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => stop(signal, 0));

  for (let i = 0; i < workers; i++) fork();
  return exited.then(() => {
    clearTimeout(killer);
    // Every worker handed its last stats before it exited: the whole server's, in one line.
    log("info", "stopped", { workers, stats: sumStats([...stats.stopped, primaryOwnStats()]) });
    return exitCode;
  });
}
