/**
 * The Worker's settings from its environment: defaults for what is unset, numbers parsed, and one
 * error line naming the variable for a missing binding or a bad value — never the value itself.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/context.ts";
import { workerConfig } from "../../src/worker/config.ts";
import { DEFAULT_MAX_WEIGHT_BYTES } from "../../src/worker/embedded-limits.ts";
import type { R2BucketBinding } from "../../src/worker/r2-store.ts";

const TEAMS = { get: async () => null } as unknown as R2BucketBinding;
const openai = { TEAMS, TROUPE_OPENAI_BASE_URL: "https://models.example/v1" };

describe("workerConfig", () => {
  it("fills the defaults: the openai backend, no prefix, no keys, the API's limits", () => {
    expect(workerConfig(openai)).toEqual({
      TEAMS,
      TROUPE_TEAMS_PREFIX: "",
      TROUPE_BACKEND: "openai",
      TROUPE_OPENAI_BASE_URL: "https://models.example/v1",
      TROUPE_OPENAI_API_KEY: undefined,
      TROUPE_API_KEY_HASHES: "",
      TROUPE_BODY_BYTES: DEFAULT_LIMITS.bodyBytes,
      TROUPE_DEADLINE_MS: DEFAULT_LIMITS.deadlineMs,
      TROUPE_RATE_PER_MINUTE: DEFAULT_LIMITS.ratePerMinute,
      TROUPE_EMBEDDED_MAX_WEIGHT_BYTES: DEFAULT_MAX_WEIGHT_BYTES,
    });
  });

  it("reads the variables: numbers trimmed and parsed, an empty API key as none, the prefix trimmed", () => {
    const config = workerConfig({
      ...openai,
      TROUPE_TEAMS_PREFIX: " prod/ ",
      TROUPE_OPENAI_API_KEY: "",
      TROUPE_BODY_BYTES: " 2048 ",
      TROUPE_DEADLINE_MS: "5000",
      TROUPE_RATE_PER_MINUTE: "12",
    });
    expect(config).toMatchObject({
      TROUPE_TEAMS_PREFIX: "prod/",
      TROUPE_OPENAI_API_KEY: undefined,
      TROUPE_BODY_BYTES: 2048,
      TROUPE_DEADLINE_MS: 5000,
      TROUPE_RATE_PER_MINUTE: 12,
    });
    expect(workerConfig({ ...openai, TROUPE_OPENAI_API_KEY: "sk-1" }).TROUPE_OPENAI_API_KEY).toBe("sk-1");
    // The embedded engine needs no OpenAI server.
    expect(workerConfig({ TEAMS, TROUPE_BACKEND: "onnx" }).TROUPE_BACKEND).toBe("onnx");
  });

  it("one line naming the variable for a missing binding, server or bad value; no value echoed", () => {
    const error = (env: Parameters<typeof workerConfig>[0]) => {
      try {
        workerConfig(env);
      } catch (e) {
        return (e as Error).message;
      }
      return "";
    };
    expect(error({ TROUPE_OPENAI_BASE_URL: "https://models.example/v1" })).toBe(
      "worker configuration: TEAMS: missing: bind the teams' R2 bucket as TEAMS ([[r2_buckets]] in wrangler.toml)",
    );
    expect(error({ TEAMS })).toBe(
      "worker configuration: TROUPE_OPENAI_BASE_URL: missing (the openai backend needs a server)",
    );
    expect(error({ ...openai, TROUPE_BACKEND: "torch" })).toMatch(/^worker configuration: TROUPE_BACKEND: /);
    expect(error({ ...openai, TROUPE_OPENAI_BASE_URL: "secret-not-a-url" })).toBe(
      "worker configuration: TROUPE_OPENAI_BASE_URL: must be the URL of an OpenAI-compatible server, e.g. https://host/v1",
    );
    for (const name of ["TROUPE_BODY_BYTES", "TROUPE_DEADLINE_MS", "TROUPE_RATE_PER_MINUTE"] as const) {
      for (const bad of ["0", "-5", "1.5", "12kb"]) {
        expect(error({ ...openai, [name]: bad }), `${name}=${bad}`).toBe(
          `worker configuration: ${name}: must be a whole number > 0`,
        );
      }
    }
  });
});
