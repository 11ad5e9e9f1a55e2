/**
 * The Cloudflare Workers entry: the same runtime-agnostic app as on Node (createApp), with
 *  - teams read from the R2 bucket bound as TEAMS (R2Store, an ObjectStore over the binding),
 *  - inference on an OpenAI-compatible server (TROUPE_OPENAI_BASE_URL). Workers cannot run ONNX:
 *    with TROUPE_BACKEND = "onnx" every solve is answered 501 `unsupported`,
 *  - API keys checked against TROUPE_API_KEY_HASHES (sha256 hex; unset = no key is accepted),
 *  - no sandbox, so teams that execute model-written code get 501,
 *  - the playground page at GET /.
 * Config: infra/workers/wrangler.toml. The app is built once per isolate, on its first request
 * (bindings only exist inside a request), and reused while the isolate lives.
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

/** The "onnx" backend on Workers: it exists so that a misrouted deployment says why it cannot serve. */
const onnxUnavailable: InferenceBackend = {
  name: "onnx",
  async policies() {
    throw new UnsupportedTeamError(
      "the onnx backend cannot run on Cloudflare Workers (no ONNX runtime); " +
        "serve the team's policies from an OpenAI-compatible server (TROUPE_BACKEND = openai)",
    );
  },
};

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

export function createWorkerApp(config: WorkerConfig): TroupeApp {
  const store = new R2Store(config.TEAMS, { prefix: config.TROUPE_TEAMS_PREFIX, bucketName: "TEAMS" });
  const backend =
    config.TROUPE_BACKEND === "onnx"
      ? onnxUnavailable
      : perRequestOpenAIBackend({
          baseUrl: config.TROUPE_OPENAI_BASE_URL!,
          apiKey: config.TROUPE_OPENAI_API_KEY,
        });
  return createApp({
    registry: createTeamRegistry(store),
    backend,
    // Loaded teams hold their engine: none may outlive its request (see perRequestOpenAIBackend).
    teamCacheSize: 0,
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

let built: { env: WorkerEnv; app: TroupeApp } | undefined;

function appFor(env: WorkerEnv): TroupeApp {
  if (built?.env !== env) built = { env, app: createWorkerApp(workerConfig(env)) };
  return built.app;
}

export default {
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
