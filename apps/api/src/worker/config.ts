/**
 * The Worker's settings, from its environment (wrangler.toml [vars], secrets and bindings),
 * validated once per isolate. Every field is named in errors; no value is ever echoed (some are
 * secrets).
 */
import { z } from "zod";
import { DEFAULT_LIMITS } from "../context.ts";
import { DEFAULT_MAX_WEIGHT_BYTES } from "./embedded-limits.ts";
import type { R2BucketBinding } from "./r2-store.ts";

/** The bindings and variables the Worker reads (see infra/workers/wrangler.toml). */
export interface WorkerEnv {
  /** R2 bucket with the published teams. */
  readonly TEAMS?: R2BucketBinding;
  readonly TROUPE_TEAMS_PREFIX?: string;
  /**
   * "openai" (default) or "onnx": the embedded engine inside the Worker, which only the embedded
   * build has (infra/workers/wrangler.embedded.toml); the plain build answers its solves 501.
   */
  readonly TROUPE_BACKEND?: string;
  readonly TROUPE_OPENAI_BASE_URL?: string;
  readonly TROUPE_OPENAI_API_KEY?: string;
  /** Accepted API keys as sha256 hex: comma-separated, or the JSON array of auth.ts. Unset = nobody. */
  readonly TROUPE_API_KEY_HASHES?: string;
  readonly TROUPE_BODY_BYTES?: string;
  readonly TROUPE_DEADLINE_MS?: string;
  readonly TROUPE_RATE_PER_MINUTE?: string;
  /** The onnx backend: most bytes of weights (model.safetensors, all policies) a team may have. */
  readonly TROUPE_EMBEDDED_MAX_WEIGHT_BYTES?: string;
}

const positiveInt = (fallback: number) =>
  z
    .string()
    .trim()
    .regex(/^[1-9][0-9]*$/, "must be a whole number > 0")
    .transform(Number)
    .optional()
    .transform((v) => v ?? fallback);

const WorkerConfigSchema = z.object({
  TEAMS: z.custom<R2BucketBinding>(
    (v) => typeof v === "object" && v !== null && typeof (v as R2BucketBinding).get === "function",
    "missing: bind the teams' R2 bucket as TEAMS ([[r2_buckets]] in wrangler.toml)",
  ),
  TROUPE_TEAMS_PREFIX: z.string().trim().default(""),
  TROUPE_BACKEND: z.enum(["openai", "onnx"]).default("openai"),
  /** Required with the openai backend. */
  TROUPE_OPENAI_BASE_URL: z
    .url("must be the URL of an OpenAI-compatible server, e.g. https://host/v1")
    .optional(),
  /** "" (an empty var) means none. */
  TROUPE_OPENAI_API_KEY: z
    .string()
    .optional()
    .transform((v) => (v === "" ? undefined : v)),
  TROUPE_API_KEY_HASHES: z.string().default(""),
  TROUPE_BODY_BYTES: positiveInt(DEFAULT_LIMITS.bodyBytes),
  TROUPE_DEADLINE_MS: positiveInt(DEFAULT_LIMITS.deadlineMs),
  TROUPE_RATE_PER_MINUTE: positiveInt(DEFAULT_LIMITS.ratePerMinute),
  TROUPE_EMBEDDED_MAX_WEIGHT_BYTES: positiveInt(DEFAULT_MAX_WEIGHT_BYTES),
});
export type WorkerConfig = z.output<typeof WorkerConfigSchema>;

export function workerConfig(env: WorkerEnv): WorkerConfig {
  const parsed = WorkerConfigSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`worker configuration: ${issue.path.join(".") || "(env)"}: ${issue.message}`);
  }
  if (parsed.data.TROUPE_BACKEND === "openai" && parsed.data.TROUPE_OPENAI_BASE_URL === undefined) {
    throw new Error(
      "worker configuration: TROUPE_OPENAI_BASE_URL: missing (the openai backend needs a server)",
    );
  }
  return parsed.data;
}
