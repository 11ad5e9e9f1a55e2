/**
 * The Cloudflare Workers entry: the same runtime-agnostic app as on Node (createApp), with
 *  - teams read from the R2 bucket bound as TEAMS (R2Store, an ObjectStore over the binding),
 *  - inference on an OpenAI-compatible server (TROUPE_OPENAI_BASE_URL), or with TROUPE_BACKEND =
 *    "onnx" the embedded engine inside the Worker — only in the embedded build (worker/embedded.ts,
 *    infra/workers/wrangler.embedded.toml), which carries onnxruntime-web's wasm; this plain build
 *    answers those solves 501 `unsupported`,
 *  - API keys checked against TROUPE_API_KEY_HASHES (sha256 hex; unset = no key is accepted),
 *  - no sandbox, so teams that execute model-written code get 501,
 *  - the playground page at GET /.
 * Config: infra/workers/wrangler.toml (wrangler.embedded.toml for the embedded build). The app is
 * built once per isolate, on its first request (bindings only exist inside a request), and reused
 * while the isolate lives.
 */
import {
  createOpenAIBackend,
  createTeamRegistry,
  type InferenceBackend,
  UnsupportedTeamError,
} from "@troupe/teams";
import { createApp, type TroupeApp } from "./app.ts";
import { keyAuth, parseApiKeys } from "./auth.ts";
import { ApiError } from "./errors.ts";
import { playgroundRoutes } from "./playground/routes.ts";
import { type WorkerConfig, type WorkerEnv, workerConfig } from "./worker/config.ts";
import { R2Store } from "./worker/r2-store.ts";

/** The "onnx" backend of the plain build: so that a misrouted deployment says why it cannot serve. */
const onnxUnavailable: InferenceBackend = {
  name: "onnx",
  async policies() {
    throw new UnsupportedTeamError(
      "the onnx backend cannot run on Cloudflare Workers in this build (no ONNX runtime bundled); " +
        "deploy the embedded build (infra/workers/wrangler.embedded.toml) or serve the team's policies from an " +
        "OpenAI-compatible server (TROUPE_BACKEND = openai)",
    );
  },
};

/**
 * Loaded teams an embedded Worker keeps: the weight budget (TROUPE_EMBEDDED_MAX_WEIGHT_BYTES) is
 * per team, so the isolate holds the team it serves and a second one while a deployment moves
 * between versions.
 */
const EMBEDDED_TEAMS_KEPT = 2; // not exported: every export of a Worker module must be a handler

/** Makes the onnx backend of a build (the embedded build's runs the team inside the Worker). */
export type OnnxBackendFactory = (config: WorkerConfig) => InferenceBackend;

/**
 * The openai backend, with a fresh engine for every request.
 *
 * Why: Workers refuse to touch an I/O object (streams, AbortSignals, …) from any request but the
 * one that created it ("Cannot perform I/O on behalf of a different request"). engine-openai's
 * HTTP client owns one AbortController for its whole life (to abort everything on close), so an
 * engine built during one request fails in the next. Until that client creates its controllers per
 * call, each request builds its own engine: the tokenizer files are read from R2 again (small, and
 * the manifest itself stays cached), and loaded teams are not kept (teamCacheSize 0 below).
 */
function perRequestOpenAIBackend(options: Parameters<typeof createOpenAIBackend>[0]): InferenceBackend {
  return {
    name: "openai",
    policies: (manifest, registry) => createOpenAIBackend(options).policies(manifest, registry),
  };
}

export function createWorkerApp(config: WorkerConfig, onnxBackend?: OnnxBackendFactory): TroupeApp {
  const store = new R2Store(config.TEAMS, { prefix: config.TROUPE_TEAMS_PREFIX, bucketName: "TEAMS" });
  const onnx = config.TROUPE_BACKEND === "onnx";
  const backend = onnx
    ? (onnxBackend?.(config) ?? onnxUnavailable)
    : perRequestOpenAIBackend({
        baseUrl: config.TROUPE_OPENAI_BASE_URL!,
        apiKey: config.TROUPE_OPENAI_API_KEY,
      });
  return createApp({
    registry: createTeamRegistry(store),
    backend,
    // Loaded openai teams hold their engine: none may outlive its request (perRequestOpenAIBackend).
    // The embedded engine holds no I/O object: its teams stay loaded for the isolate's life.
    teamCacheSize: onnx ? EMBEDDED_TEAMS_KEPT : 0,
    auth: keyAuth(parseApiKeys(config.TROUPE_API_KEY_HASHES, "TROUPE_API_KEY_HASHES")),
    limits: {
      bodyBytes: config.TROUPE_BODY_BYTES,
      deadlineMs: config.TROUPE_DEADLINE_MS,
      ratePerMinute: config.TROUPE_RATE_PER_MINUTE,
    },
    sandboxAvailable: false,
    extraRoutes: playgroundRoutes,
  });
}

/** The Worker's fetch handler; the embedded build passes its onnx backend. */
export function workerHandler(onnxBackend?: OnnxBackendFactory) {
  let built: { env: WorkerEnv; app: TroupeApp } | undefined;
  const appFor = (env: WorkerEnv): TroupeApp => {
    if (built?.env !== env) built = { env, app: createWorkerApp(workerConfig(env), onnxBackend) };
    return built.app;
  };
  return {
    async fetch(request: Request, env: WorkerEnv, ctx: unknown): Promise<Response> {
      let app: TroupeApp;
      try {
        app = appFor(env);
      } catch (error) {
        // A deployment mistake (missing binding, bad key hash): say which setting, never its value.
        console.error(error);
        return new ApiError(500, "internal", (error as Error).message).toResponse();
      }
      return app.fetch(request, env, ctx as never);
    },
  };
}

export default workerHandler();
