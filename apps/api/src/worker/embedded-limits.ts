/**
 * What an embedded team must fit in on Cloudflare Workers, and the one error a team that does not
 * fit gets — checked from the manifest before a byte of weights is read, because running out of
 * memory is not an error a Worker can answer: the isolate is killed mid-request.
 *
 * Workers limits (paid plan; https://developers.cloudflare.com/workers/platform/limits/):
 *  - 128 MB of memory per isolate: JavaScript heap and WebAssembly memory together.
 *  - 10 MB script size after compression (free plan: 3 MB). The embedded build carries
 *    onnxruntime-web's wasm (14.2 MB, 3.7 MB gzipped): it fits the paid plan only. Weights are not
 *    part of the script: they are read from R2 at the first request of each isolate.
 *
 * What a team takes, measured in local workerd (wasmMemoryBytes of @troupe/engine-onnx/wasm after
 * a few solves, two-policy teams): the wasm memory is 16 MB (its initial size) + about 2 × the
 * team's weights — 16.8 MB for 0.2 MB of weights, 20.2 MB for 3.7 MB, 72.5 MB for 26.2 MB,
 * 180.7 MB for 84.2 MB — the prefill's weight inputs and the decode step's baked, pre-packed
 * copy; it never shrinks. The JS heap adds the engine's float32 copy of the weights (1 ×) and,
 * while a team loads, the bytes read from R2 and the baked graph (not measured: workerd does not
 * report its heap). So about 16 MB + 3 × weights, plus the app's own heap (a 2.1 MB bundle of JS):
 * a 16 MiB budget of weights (4 M float32 parameters, all policies together) comes to about 70 MB,
 * leaving room under 128 MB for load-time copies, the KV cache and activations. TROUPE_EMBEDDED_MAX_WEIGHT_BYTES changes it.
 */
import type { TeamManifest } from "@troupe/teams";
import { ApiError } from "../errors.ts";

export const DEFAULT_MAX_WEIGHT_BYTES = 16 * 1024 * 1024;
const WEIGHTS_FILE = "model.safetensors";

/** Bytes of weights of a published team: model.safetensors of every policy, from the manifest. */
export function teamWeightBytes(manifest: TeamManifest): number {
  return Object.values(manifest.policies).reduce((sum, p) => sum + (p.files[WEIGHTS_FILE]?.bytes ?? 0), 0);
}

/** Exact (the limit is a byte count) and readable. */
const size = (bytes: number) => `${bytes} bytes (${(bytes / 1e6).toFixed(1)} MB)`;

/** Throws the team-too-large error (507, naming the limit) if the team's weights exceed `maxBytes`. */
export function checkTeamFits(manifest: TeamManifest, maxBytes: number): void {
  const bytes = teamWeightBytes(manifest);
  if (bytes <= maxBytes) return;
  const policies = Object.keys(manifest.policies).length;
  throw new ApiError(
    507,
    "unsupported",
    `team "${manifest.name}" v${manifest.version} has ${size(bytes)} of weights (${policies} ` +
      `${policies === 1 ? "policy" : "policies"}); the embedded engine on Workers takes at most ` +
      `${size(maxBytes)} (TROUPE_EMBEDDED_MAX_WEIGHT_BYTES), within the 128 MB ` +
      "memory limit of a Worker isolate: serve this team from Node or an OpenAI-compatible server",
    ["team"],
  );
}
