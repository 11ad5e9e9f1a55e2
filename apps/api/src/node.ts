/**
 * The Node entry: `nx run api:serve [-- --port 8787 --backend openai --openai-base-url http://...]`.
 *
 * Every option is a flag or an environment variable (the flag wins):
 *   --store             TROUPE_STORE            where teams are published (default file://./.troupe,
 *                                               relative to the workspace root — the trainer's default store)
 *   --port              PORT                    default 8787
 *   --host              HOST                    default 127.0.0.1
 *   --keys-file         TROUPE_API_KEYS_FILE    JSON [{id, sha256, ratePerMinute?}]
 *                       TROUPE_API_KEY_HASHES   the same JSON, or comma-separated sha256 hex digests
 *   --backend           TROUPE_BACKEND          onnx (default: the embedded CPU engine) | openai
 *   --openai-base-url   TROUPE_OPENAI_BASE_URL  the OpenAI-compatible server (vLLM, SGLang…) for --backend openai
 *                       TROUPE_OPENAI_API_KEY   its key, if it wants one
 *   --body-limit        TROUPE_BODY_BYTES       request body limit in bytes (default 65536)
 *   --deadline-ms       TROUPE_DEADLINE_MS      per-request deadline (default 30000)
 *   --rate-per-minute   TROUPE_RATE_PER_MINUTE  per key (default 600)
 *   --batching          TROUPE_BATCHING         on (default): concurrent turns of a policy share decode steps
 *                                               (continuous batching) | off: one FIFO slot for every turn
 *   --max-queued        TROUPE_MAX_QUEUED       turns waiting per policy before 503 + Retry-After (default 1024)
 *   --workers           TROUPE_WORKERS          server processes on the one port (default 1; cluster.ts): one
 *                                               process runs on about one core, N use N
 *   --ort-threads       TROUPE_ORT_THREADS      ONNX Runtime's intra-op threads per server process (default: 2
 *                                               for a single process, 1 per worker with --workers)
 *   --sandbox           TROUPE_SANDBOX          where teams that run the agents' code (coding, math's tool,
 *                                               Sudoku's and Plan-Path's tool agents) run it: auto (default:
 *                                               bubblewrap when it can run here, else such teams get 501 and
 *                                               the start logs why) | on (refuse to start without it) | off
 * Without any key the server runs unauthenticated, which it allows only on a loopback address.
 * SIGTERM / SIGINT: stop accepting, let in-flight requests finish (up to 10 s), close the backend
 * and the sandbox.
 */

import cluster from "node:cluster";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { serve } from "@hono/node-server";
import { manifestEnvironmentLoader } from "@troupe/envs/module";
import {
  createSandboxService,
  type SandboxOptions,
  type SandboxService,
  SandboxUnavailableError,
} from "@troupe/sandbox";
import { checkStore, StoreError } from "@troupe/storage";
import { DEFAULT_STORE_URI, openStore } from "@troupe/storage/node";
import {
  createOpenAIBackend,
  createTeamRegistry,
  type InferenceBackend,
  UnsupportedTeamError,
} from "@troupe/teams";
import { createOnnxBackend, type OnnxBackend } from "@troupe/teams/onnx";
import { z } from "zod";
import { createApp } from "./app.ts";
import { type ApiKey, keyAuth, noAuth, parseApiKeys } from "./auth.ts";
import { httpUrl, primaryRateLimiter, processStats, runPrimary, workerStats } from "./cluster.ts";
import { consoleLogger, DEFAULT_LIMITS } from "./context.ts";
import { playgroundRoutes } from "./playground/routes.ts";

const workspaceRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
/** How long a shutdown waits for in-flight requests before leaving anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

const USAGE = `usage: api serve [--store <uri>] [--port <n>] [--host <addr>] [--keys-file <path>]
                 [--backend onnx|openai] [--openai-base-url <url>]
                 [--body-limit <bytes>] [--deadline-ms <ms>] [--rate-per-minute <n>]
                 [--batching on|off] [--max-queued <n>] [--workers <n>] [--ort-threads <n>]
                 [--sandbox auto|on|off]`;

const positiveInt = (name: string) =>
  z.coerce
    .number({ error: `${name} must be a number` })
    .int(`${name} must be an integer`)
    .positive(`${name} must be > 0`);

const ServeConfigSchema = z.strictObject({
  store: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65_535),
  host: z.string().min(1),
  keysFile: z.string().optional(),
  keyHashes: z.string().optional(),
  backend: z.enum(["onnx", "openai"]),
  openaiBaseUrl: z.url().optional(),
  openaiApiKey: z.string().optional(),
  bodyBytes: positiveInt("--body-limit"),
  deadlineMs: positiveInt("--deadline-ms"),
  ratePerMinute: positiveInt("--rate-per-minute"),
  batching: z.enum(["on", "off"], { error: "--batching must be on or off" }),
  maxQueued: positiveInt("--max-queued").optional(),
  workers: positiveInt("--workers"),
  ortThreads: positiveInt("--ort-threads").optional(),
  sandbox: z.enum(["auto", "on", "off"], { error: "--sandbox must be auto, on or off" }),
});
export type ServeConfig = z.infer<typeof ServeConfigSchema>;

/** Flags over environment over defaults, validated; an error names the flag. */
export function serveConfig(argv: string[], env: NodeJS.ProcessEnv): ServeConfig {
  const { values } = parseArgs({
    args: argv,
    options: {
      store: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      "keys-file": { type: "string" },
      backend: { type: "string" },
      "openai-base-url": { type: "string" },
      "body-limit": { type: "string" },
      "deadline-ms": { type: "string" },
      "rate-per-minute": { type: "string" },
      batching: { type: "string" },
      "max-queued": { type: "string" },
      workers: { type: "string" },
      "ort-threads": { type: "string" },
      sandbox: { type: "string" },
    },
    strict: true,
  });
  const parsed = ServeConfigSchema.safeParse({
    store: values.store ?? env.TROUPE_STORE ?? DEFAULT_STORE_URI,
    port: values.port ?? env.PORT ?? 8787,
    host: values.host ?? env.HOST ?? "127.0.0.1",
    keysFile: values["keys-file"] ?? env.TROUPE_API_KEYS_FILE,
    keyHashes: env.TROUPE_API_KEY_HASHES,
    backend: values.backend ?? env.TROUPE_BACKEND ?? "onnx",
    openaiBaseUrl: values["openai-base-url"] ?? env.TROUPE_OPENAI_BASE_URL,
    openaiApiKey: env.TROUPE_OPENAI_API_KEY,
    bodyBytes: values["body-limit"] ?? env.TROUPE_BODY_BYTES ?? DEFAULT_LIMITS.bodyBytes,
    deadlineMs: values["deadline-ms"] ?? env.TROUPE_DEADLINE_MS ?? DEFAULT_LIMITS.deadlineMs,
    ratePerMinute: values["rate-per-minute"] ?? env.TROUPE_RATE_PER_MINUTE ?? DEFAULT_LIMITS.ratePerMinute,
    batching: values.batching ?? env.TROUPE_BATCHING ?? "on",
    maxQueued: values["max-queued"] ?? env.TROUPE_MAX_QUEUED,
    workers: values.workers ?? env.TROUPE_WORKERS ?? 1,
    ortThreads: values["ort-threads"] ?? env.TROUPE_ORT_THREADS,
    sandbox: values.sandbox ?? env.TROUPE_SANDBOX ?? "auto",
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${issue.path.join(".") || "options"}: ${issue.message}`);
  }
  if (parsed.data.backend === "openai" && parsed.data.openaiBaseUrl === undefined) {
    throw new Error("--backend openai needs --openai-base-url (or TROUPE_OPENAI_BASE_URL)");
  }
  return parsed.data;
}

const isLoopback = (host: string) => host === "localhost" || host === "::1" || host.startsWith("127.");

/** `--sandbox on` where bubblewrap cannot run: one line, exit code 2 (as a store that cannot hold teams). */
export class SandboxRefusedError extends Error {
  override readonly name = "SandboxRefusedError";
}

/**
 * The sandbox the server runs agents' code in, in a service process of its own (a server holding
 * its teams' models would fork slowly; @troupe/sandbox service.ts), its probe run done; `state`
 * says what the start log reports. `auto` without bubblewrap serves on without one (those teams
 * get 501); `on` refuses to start. `options` are the sandbox's own (the server passes none).
 */
export async function serverSandbox(
  config: Pick<ServeConfig, "sandbox">,
  options: SandboxOptions = {},
): Promise<{ sandbox?: SandboxService; state: string }> {
  if (config.sandbox === "off") return { state: "off" };
  try {
    const sandbox = await createSandboxService(options);
    // The probe run said bubblewrap runs here. Its process (~75 MiB) is stopped until code runs:
    // the first run starts it again (about a second), so a server whose teams run no code holds none.
    sandbox.close();
    return { sandbox, state: "bubblewrap" };
  } catch (error) {
    if (!(error instanceof SandboxUnavailableError)) throw error;
    if (config.sandbox === "on") {
      throw new SandboxRefusedError(
        `--sandbox on: bubblewrap cannot run here (${error.reason}): install it (bash tools/system-deps.sh), or pass --sandbox off`,
      );
    }
    return { state: `unavailable (${error.reason}): teams that run the agents' code get 501` };
  }
}

/**
 * What must hold before anything listens: the keys parse, authentication is on unless the address
 * is a loopback one, and the store can hold teams. Run by the cluster's primary before it forks,
 * so a bad setting is one line from one process.
 */
async function preflight(config: ServeConfig) {
  const keys: ApiKey[] = [
    ...(config.keysFile ? parseApiKeys(readFileSync(config.keysFile, "utf8"), config.keysFile) : []),
    ...(config.keyHashes ? parseApiKeys(config.keyHashes, "TROUPE_API_KEY_HASHES") : []),
  ];
  if (keys.length === 0 && !isLoopback(config.host)) {
    throw new Error(
      `no API keys (--keys-file / TROUPE_API_KEY_HASHES): refusing to serve ${config.host} without authentication`,
    );
  }
  const store = openStore(config.store, { cwd: workspaceRoot });
  // Before listening, as `train` does: a store that cannot hold teams (a folder that does not
  // exist, a file, /proc; S3 without credentials) is one line, not a server whose every solve fails.
  await checkStore(store, { write: false });
  return { keys, store };
}

/** The cluster primary's checks before it forks: preflight's, and `--sandbox on` can run here. */
async function primaryPreflight(config: ServeConfig): Promise<void> {
  await preflight(config);
  // Its probe run only: serverSandbox stops the service process after it.
  if (config.sandbox === "on") await serverSandbox(config);
}

/**
 * Starts one server process. In a cluster's worker (`--workers` > 1) the rate buckets are the
 * primary's and the start is logged as "worker listening" (the primary logs "listening" once).
 */
export async function startServer(config: ServeConfig) {
  const { keys, store } = await preflight(config);
  const { sandbox, state: sandboxState } = await serverSandbox(config);
  if (sandbox === undefined && config.sandbox === "auto")
    consoleLogger("warn", "no sandbox", { sandbox: sandboxState });
  // The engine's sessions take their thread count from the environment when they are created.
  if (config.ortThreads !== undefined) process.env.TROUPE_ORT_THREADS = String(config.ortThreads);
  const backend: InferenceBackend =
    config.backend === "openai"
      ? createOpenAIBackend({ baseUrl: config.openaiBaseUrl!, apiKey: config.openaiApiKey })
      : createOnnxBackend({
          batching: config.batching === "on",
          maxQueued: config.maxQueued,
          meterCpu: true,
        });
  const onnx = backend.name === "onnx" ? (backend as OnnxBackend) : undefined;
  // This process's stats; in a cluster's worker /healthz asks the primary for the whole server's.
  const local = () => processStats(app.stats, onnx?.stats());
  const inCluster = cluster.isWorker ? workerStats(local) : undefined;
  const app = createApp({
    // A team trained on an environment of its own loads the same module (and data files) from
    // the workspace, refused (501) when one changed since it was published.
    registry: createTeamRegistry(store, {
      prepareEnvironment: manifestEnvironmentLoader(workspaceRoot, (m) => new UnsupportedTeamError(m)),
    }),
    backend,
    auth: keys.length > 0 ? keyAuth(keys) : noAuth,
    limits: {
      bodyBytes: config.bodyBytes,
      deadlineMs: config.deadlineMs,
      ratePerMinute: config.ratePerMinute,
    },
    ...(sandbox ? { sandbox } : {}),
    extraRoutes: playgroundRoutes,
    ...(cluster.isWorker ? { rateLimiter: primaryRateLimiter() } : {}),
    serverStats: inCluster ? () => inCluster.whole() : local,
  });
  const server = await new Promise<ReturnType<typeof serve>>((ready, fail) => {
    const s = serve(
      {
        fetch: app.fetch,
        port: config.port,
        hostname: config.host,
        // The app answers a slow body with 408 at its deadline; Node's own limits only catch what
        // never reaches it (headers sent slowly), a little later than the deadline.
        serverOptions: {
          headersTimeout: Math.min(60_000, config.deadlineMs + 5_000),
          requestTimeout: config.deadlineMs + 10_000,
        },
      },
      () => ready(s),
    );
    s.once("error", fail);
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  consoleLogger("info", cluster.isWorker ? "worker listening" : "listening", {
    url: httpUrl(config.host, port),
    store: store.uri,
    backend: backend.name,
    ...(config.backend === "onnx" ? { batching: config.batching } : {}),
    auth: keys.length > 0 ? `${keys.length} key(s)` : "off (loopback only)",
    sandbox: sandboxState,
    ...(cluster.isWorker ? { worker: cluster.worker?.id, pid: process.pid } : {}),
  });

  let closing: Promise<void> | undefined;
  const shutdown = (reason: string): Promise<void> => {
    closing ??= (async () => {
      consoleLogger("info", "shutting down", { reason, inFlightSolves: app.stats.inFlightSolves });
      const closed = new Promise<void>((done) => server.close(() => done()));
      // Idle keep-alive connections would hold close() open: drop them now, the busy ones at the grace limit.
      (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      const grace = setTimeout(
        () => (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.(),
        SHUTDOWN_GRACE_MS,
      );
      await closed;
      clearTimeout(grace);
      await backend.close?.();
      sandbox?.close();
      consoleLogger("info", "stopped", { stats: local() });
      await inCluster?.final();
    })();
    return closing;
  };
  return { app, server, port, shutdown };
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help")) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let config: ServeConfig;
  try {
    config = serveConfig(argv, process.env);
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  // With workers, the primary only checks what must hold before forking them (they serve).
  const primary = config.workers > 1 && cluster.isPrimary;
  let started: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    if (primary) await primaryPreflight(config);
    else started = await startServer(config);
  } catch (error) {
    if (!(error instanceof StoreError || error instanceof SandboxRefusedError)) throw error;
    process.stderr.write(`error: ${error.message}\n`);
    return 2;
  }
  if (started === undefined)
    return await runPrimary({ workers: config.workers, host: config.host, log: consoleLogger });
  const { shutdown } = started;
  await new Promise<void>((done) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => void shutdown(signal).then(done));
    }
    // A worker whose primary is gone has no one to hand it connections or rate tokens.
    if (cluster.isWorker) process.once("disconnect", () => void shutdown("the primary is gone").then(done));
  });
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2))
    .then(
      (code) => {
        process.exitCode = code;
      },
      (error) => {
        process.stderr.write(`error: ${(error as Error).message}\n`);
        process.exitCode = 1;
      },
    )
    .finally(() => {
      // A cluster worker's IPC channel would keep it alive once it has stopped (or failed to start).
      if (cluster.isWorker && process.connected) process.disconnect();
    });
}
