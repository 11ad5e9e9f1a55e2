/**
 * `--workers N`: the Node server as N processes on one port (node:cluster). One process runs the
 * app's JavaScript on one thread — HTTP, the episode loop, sampling, the ONNX runs' host side — so
 * a single server stops scaling at about one core, whatever the machine has; N workers use N.
 *
 * The primary serves nothing itself. It forks the workers (the same entry, the same flags), hands
 * them the listening socket (round-robin), holds the rate-limit buckets for all of them (a worker
 * asks it for each request's token over IPC, so a key's limit holds across processes, not per
 * process), replaces a worker that dies while serving, and on SIGTERM/SIGINT stops every worker
 * (each drains its in-flight requests as a single server does) before it exits. Each worker loads
 * its own teams and runs its own continuous batches: N workers hold N copies of a team's weights.
 */
import cluster, { type Worker } from "node:cluster";
import type { Logger } from "./context.ts";
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

  cluster.on("message", (worker, message: unknown) => {
    if (!isMessage<TakeMessage>(message, "rate-take")) return;
    const reply: DecisionMessage = {
      troupe: "rate-decision",
      id: message.id,
      decision: buckets.take(message.key, message.ratePerMinute),
    };
    if (worker.isConnected()) worker.send(reply);
  });

  const fork = (): void => {
    // One ONNX Runtime thread per worker (unless set): N workers already keep N cores busy, and
    // intra-op threads on top only contend with them (2 workers on 2 cores: ~400 req/s with one
    // thread each, ~370 with two).
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
    log("info", "stopped", { workers });
    return exitCode;
  });
}
