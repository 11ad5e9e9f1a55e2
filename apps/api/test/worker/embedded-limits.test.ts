/**
 * The embedded Worker's weight budget, without workerd: what counts as a team's weights, the one
 * 507 for a team over it, and the setting that changes it.
 */
import type { TeamManifest } from "@troupe/teams";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/errors.ts";
import { workerConfig } from "../../src/worker/config.ts";
import {
  checkTeamFits,
  DEFAULT_MAX_WEIGHT_BYTES,
  teamWeightBytes,
} from "../../src/worker/embedded-limits.ts";
import type { R2BucketBinding } from "../../src/worker/r2-store.ts";

const file = (bytes: number) => ({ sha256: "0".repeat(64), bytes });
/** Just the fields the budget reads. */
const manifest = (weights: number[]) =>
  ({
    name: "team",
    version: 3,
    policies: Object.fromEntries(
      weights.map((w, i) => [
        `p${i}`,
        { files: { "model.safetensors": file(w), "model.onnx": file(999_999), "config.json": file(10) } },
      ]),
    ),
  }) as unknown as TeamManifest;

describe("the embedded Worker's weight budget", () => {
  it("counts model.safetensors of every policy, not the graph or the config", () => {
    expect(teamWeightBytes(manifest([1_000, 2_500]))).toBe(3_500);
  });

  it("lets a team at the budget through and refuses one byte more: 507 naming the limit", () => {
    expect(() => checkTeamFits(manifest([1_000, 2_000]), 3_000)).not.toThrow();
    let error: unknown;
    try {
      checkTeamFits(manifest([1_000_000, 2_000_001]), 3_000_000);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(507);
    expect((error as ApiError).body()).toEqual({
      error: {
        code: "unsupported",
        message:
          'team "team" v3 has 3000001 bytes (3.0 MB) of weights (2 policies); the embedded engine on Workers ' +
          "takes at most 3000000 bytes (3.0 MB) (TROUPE_EMBEDDED_MAX_WEIGHT_BYTES), within the 128 MB " +
          "memory limit of a Worker isolate: " +
          "serve this team from Node or an OpenAI-compatible server",
        path: ["team"],
      },
    });
  });

  it("is TROUPE_EMBEDDED_MAX_WEIGHT_BYTES, 16 MiB by default, and a bad value is one line naming it", () => {
    const TEAMS = { get: async () => null } as unknown as R2BucketBinding;
    const base = { TEAMS, TROUPE_BACKEND: "onnx" };
    expect(workerConfig(base).TROUPE_EMBEDDED_MAX_WEIGHT_BYTES).toBe(DEFAULT_MAX_WEIGHT_BYTES);
    expect(DEFAULT_MAX_WEIGHT_BYTES).toBe(16 * 1024 * 1024);
    expect(
      workerConfig({ ...base, TROUPE_EMBEDDED_MAX_WEIGHT_BYTES: "1000" }).TROUPE_EMBEDDED_MAX_WEIGHT_BYTES,
    ).toBe(1000);
    expect(() => workerConfig({ ...base, TROUPE_EMBEDDED_MAX_WEIGHT_BYTES: "16MB" })).toThrow(
      "worker configuration: TROUPE_EMBEDDED_MAX_WEIGHT_BYTES: must be a whole number > 0",
    );
  });
});
