/**
 * The embedded Worker build (infra/workers/wrangler.embedded.toml): worker.ts plus the embedded
 * ONNX engine, so TROUPE_BACKEND = "onnx" runs a published team inside the Worker.
 *
 * The backend is Node's (`createOnnxBackend` of @troupe/teams/onnx: the same OnnxEngine, graphs,
 * decode loop, tokenizer and sampler), with one substitution made by the bundler: the build
 * aliases `onnxruntime-node` to `@troupe/engine-onnx/wasm`, onnxruntime-web's WebAssembly build
 * behind the same API. So at temperature 0 a Worker and the Node server write the same transcript.
 *
 * Per isolate: the backend lives as long as the app, i.e. the isolate; a loaded team's policies
 * (weights read from R2 once, sessions built once) as long as the app's cache of loaded teams keeps
 * the team (worker.ts: `EMBEDDED_TEAMS_KEPT`). A team whose weights cannot fit the
 * isolate's memory is refused before loading (embedded-limits.ts).
 */
import type { InferenceBackend } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { workerHandler } from "../worker.ts";
import type { WorkerConfig } from "./config.ts";
import { checkTeamFits } from "./embedded-limits.ts";

export function embeddedBackend(
  config: Pick<WorkerConfig, "TROUPE_EMBEDDED_MAX_WEIGHT_BYTES">,
): InferenceBackend {
  // One generation at a time: the wasm runtime has one thread, and a Worker isolate one core.
  const onnx = createOnnxBackend({ maxConcurrent: 1 });
  return {
    name: "onnx",
    async policies(manifest, registry) {
      checkTeamFits(manifest, config.TROUPE_EMBEDDED_MAX_WEIGHT_BYTES);
      return onnx.policies(manifest, registry);
    },
    unload: (manifest) => onnx.unload(manifest),
    close: () => onnx.close(),
  };
}

export default workerHandler(embeddedBackend);
