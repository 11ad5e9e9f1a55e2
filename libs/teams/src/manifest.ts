/**
 * A team manifest: everything needed to serve one published version of a trained team — which
 * environment it plays (as the @troupe/envs registry names it), how its roles map to policies,
 * each policy's files with their checksums, the sampling it was evaluated with, its held-out
 * evaluation, and where it came from (run and step).
 *
 * The schema is strict: an unknown key is an error, not something silently ignored, so a manifest
 * written by a newer publisher fails loudly on an older server instead of being half understood.
 */
import { FileRefSchema } from "@troupe/envs/registry";
import { z } from "zod";

export const TEAM_MANIFEST_SCHEMA_VERSION = 1;

/** Team names appear in object keys and in OpenAI model names (`<team>-<policy>`). */
export const TeamNameSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,63}$/,
    "a team name is 1–64 characters of a-z, 0-9, '.', '_', '-', starting with a letter or digit",
  );

/** Policy ids and file names are single key segments. */
const SegmentSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "must be one path segment of A-Z, a-z, 0-9, '.', '_', '-'");

export const FileEntrySchema = z.strictObject({
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits"),
  bytes: z.number().int().min(0),
});

/**
 * The sampling a policy is served with by default (the recipe's sampling with the evaluation
 * temperature). `topK`, `stop` and `stopTokenIds` are optional additions to the contract: a
 * recipe that trained with stop strings must be served with the same ones.
 */
export const ServedSamplingSchema = z.strictObject({
  temperature: z.number().min(0),
  topP: z.number().gt(0).max(1),
  maxTokens: z.number().int().min(1),
  topK: z.number().int().min(0).optional(),
  stop: z.array(z.string().min(1)).optional(),
  stopTokenIds: z.array(z.number().int().min(0)).optional(),
});
export type ServedSampling = z.infer<typeof ServedSamplingSchema>;

/** Which checkpoint files a policy must have (the ONNX graph is optional: see onnx-export.ts). */
export const REQUIRED_POLICY_FILES = ["config.json", "model.safetensors"] as const;

/** Describes `model.onnx` when a policy has one: the decode graph, weights as named graph inputs. */
export const OnnxGraphInfoSchema = z.strictObject({
  file: z.literal("model.onnx"),
  graph: z.literal("decode"),
  opset: z.number().int().min(1),
  /** The graph's weight inputs are the tensors of this file, under their safetensors names. */
  weights: z.literal("model.safetensors"),
});
export type OnnxGraphInfo = z.infer<typeof OnnxGraphInfoSchema>;

export const PolicyManifestSchema = z
  .strictObject({
    files: z.record(SegmentSchema, FileEntrySchema),
    /** Human-readable model description, e.g. "qwen3 hidden 128 × 2 layers". */
    model: z.string().min(1),
    parameters: z.number().int().min(0),
    sampling: ServedSamplingSchema,
    onnx: OnnxGraphInfoSchema.optional(),
  })
  .superRefine((policy, ctx) => {
    for (const name of REQUIRED_POLICY_FILES) {
      if (policy.files[name] === undefined) {
        ctx.addIssue({ code: "custom", path: ["files", name], message: `${name} is missing` });
      }
    }
    if (policy.files["tokenizer.json"] === undefined && policy.files["tokenizer_config.json"] === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["files"],
        message: "the tokenizer is missing (tokenizer.json or tokenizer_config.json)",
      });
    }
    if (policy.onnx !== undefined && policy.files[policy.onnx.file] === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["onnx", "file"],
        message: `${policy.onnx.file} is not in files`,
      });
    }
  });

export const EvalSummarySchema = z.strictObject({
  successRate: z.number().min(0).max(1),
  ci95: z.tuple([z.number().min(0).max(1), z.number().min(0).max(1)]),
  tasks: z.number().int().min(0),
  meanTeamReturn: z.number(),
});
export type EvalSummary = z.infer<typeof EvalSummarySchema>;

export const TeamManifestSchema = z
  .strictObject({
    schemaVersion: z.literal(TEAM_MANIFEST_SCHEMA_VERSION),
    name: TeamNameSchema,
    version: z.number().int().min(1),
    createdAt: z.iso.datetime({ offset: true }),
    environment: z.strictObject({
      name: z.string().min(1),
      /** An environment of one's own: the module it was trained with (path from the workspace root, content hash). */
      module: FileRefSchema.optional(),
      options: z.record(z.string(), z.unknown()),
    }),
    team: z.strictObject({
      specialisation: z.enum(["shared", "per-role"]),
      maxTurns: z.number().int().min(1).optional(),
      turnOrder: z.enum(["sequential", "parallel"]).optional(),
    }),
    roles: z
      .array(
        z.strictObject({
          id: z.string().min(1),
          policy: SegmentSchema,
          /** The role's own served sampling, where it differs from its policy's (the recipe's per-role sampling). */
          sampling: ServedSamplingSchema.optional(),
        }),
      )
      .min(1),
    policies: z.record(SegmentSchema, PolicyManifestSchema),
    eval: EvalSummarySchema.optional(),
    source: z.strictObject({
      store: z.string().optional(),
      runId: z.string().min(1),
      step: z.number().int().min(0),
      // The run's team before RL (its cached warm start); `step` is then the last supervised step.
      warmStart: z.literal(true).optional(),
    }),
  })
  .superRefine((m, ctx) => {
    const seen = new Set<string>();
    m.roles.forEach((role, i) => {
      if (seen.has(role.id)) {
        ctx.addIssue({ code: "custom", path: ["roles", i, "id"], message: `duplicate role "${role.id}"` });
      }
      seen.add(role.id);
      if (m.policies[role.policy] === undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["roles", i, "policy"],
          message: `policy "${role.policy}" is not in policies (${Object.keys(m.policies).join(", ") || "none"})`,
        });
      }
    });
    const used = new Set(m.roles.map((r) => r.policy));
    for (const id of Object.keys(m.policies)) {
      if (!used.has(id)) {
        ctx.addIssue({ code: "custom", path: ["policies", id], message: "no role uses this policy" });
      }
    }
  });
export type TeamManifest = z.infer<typeof TeamManifestSchema>;

/** A manifest that does not validate; `path` is the first bad field. */
export class ManifestError extends Error {
  constructor(
    message: string,
    readonly path: readonly (string | number)[] = [],
  ) {
    super(message);
    this.name = "ManifestError";
  }
}

/** Validates a manifest; the error names where it came from and the first bad field. */
export function parseTeamManifest(value: unknown, where = "team manifest"): TeamManifest {
  const parsed = TeamManifestSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
  const field =
    issue.code === "unrecognized_keys" ? [...path, issue.keys[0]!].join(".") : path.join(".") || "(root)";
  const message =
    issue.code === "unrecognized_keys" ? `unknown key "${issue.keys.join('", "')}"` : issue.message;
  throw new ManifestError(
    `${where}: ${field}: ${message}`,
    issue.code === "unrecognized_keys" ? [...path, issue.keys[0]!] : path,
  );
}

/** Decodes manifest bytes (JSON) and validates them. */
export function decodeTeamManifest(bytes: Uint8Array, where: string): TeamManifest {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw new ManifestError(`${where}: not valid JSON: ${(error as Error).message}`);
  }
  return parseTeamManifest(json, where);
}

export function encodeTeamManifest(manifest: TeamManifest): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(parseTeamManifest(manifest), null, 2)}\n`);
}
