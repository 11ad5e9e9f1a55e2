/**
 * The HTTP boundary in zod: request bodies, parameters and responses. The same schemas validate
 * requests (strict: an unknown field is an error naming it) and generate /openapi.json.
 */
import { z } from "@hono/zod-openapi";
import { payloadFields } from "@troupe/envs/registry";
import { SolveSamplingSchema } from "@troupe/teams";

/** Each shipped environment's task fields: inputs, and labels only scoring reads. */
const TASK_FIELDS = payloadFields();

/** As @troupe/teams names teams: 1–64 of a-z 0-9 . _ -, starting with a letter or digit. */
export const TEAM_NAME_PATTERN = "[a-z0-9][a-z0-9._-]{0,63}";
/** A version reference: "latest", an alias, "v3" or "3". */
export const TEAM_REF_PATTERN = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}";

export const TeamNameParam = z
  .string()
  .regex(new RegExp(`^${TEAM_NAME_PATTERN}$`), "a team name is 1–64 characters of a-z, 0-9, '.', '_', '-'")
  .openapi({ param: { name: "name", in: "path" }, example: "planpath" });

export const TeamRefQuery = z.strictObject({
  ref: z
    .string()
    .regex(new RegExp(`^${TEAM_REF_PATTERN}$`), "a ref is 'latest', an alias, 'v3' or '3'")
    .optional()
    .openapi({ param: { name: "ref", in: "query" }, example: "stable" }),
});

/** Largest values a client may ask for: bound the work one request can cause. */
export const MAX_TURNS_LIMIT = 64;
export const MAX_SEED = 2 ** 31 - 1;

export const SolveInputSchema = z
  .strictObject({
    task: z
      .unknown()
      .optional()
      .openapi({
        description:
          "A task of the team's environment (its payload format), validated by the environment. Its labels " +
          "(reference answers, hidden tests) are optional: a task of inputs only is answered and not judged " +
          "(`solved: null`). `x-labels` lists each environment's label fields: " +
          Object.entries(TASK_FIELDS)
            .map(([env, f]) => `${env}: inputs ${f.inputs.join(", ")}; labels ${f.labels.join(", ")}`)
            .join(" · ") +
          ". A data-file environment's labels are its `options.labels`; the games and writing have none " +
          "(success is judged on the answer).",
        "x-labels": Object.fromEntries(Object.entries(TASK_FIELDS).map(([env, f]) => [env, f.labels])),
      } as Record<string, unknown>),
    generate: z
      .strictObject({
        split: z
          .enum(["test", "train"])
          .optional()
          .openapi({ description: "default: test (held-out tasks)" }),
        seed: z.number().int().min(0).max(MAX_SEED),
      })
      .optional()
      .openapi({ description: "Ask the environment to generate a task." }),
  })
  .superRefine((input, ctx) => {
    const given = ["task", "generate"].filter(
      (k) => k in input && input[k as keyof typeof input] !== undefined,
    );
    if (given.length !== 1) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message: given.length === 0 ? "give either task or generate" : "give task or generate, not both",
      });
    }
  })
  .openapi("SolveInput", { example: { generate: { seed: 7 } } });

export const SolveOptionsSchema = z
  .strictObject({
    maxTurns: z.number().int().min(1).max(MAX_TURNS_LIMIT).optional().openapi({
      description: "At most the team's own maxTurns.",
    }),
    // The sampling options as solve() declares them (@troupe/teams), so the API and the library
    // accept the same ranges.
    temperature: SolveSamplingSchema.shape.temperature,
    topP: SolveSamplingSchema.shape.topP,
    seed: SolveSamplingSchema.shape.seed.describe("Sampling seed; the answer's `seed` reproduces a solve."),
    maxTokens: SolveSamplingSchema.shape.maxTokens,
    stream: z
      .boolean()
      .optional()
      .openapi({ description: "Answer as text/event-stream: `turn` events, then `result`." }),
    transcript: z
      .boolean()
      .optional()
      .openapi({ description: "Include the turns in the JSON answer (default true)." }),
  })
  .openapi("SolveOptions");

export const SolveRequestSchema = z
  .strictObject({
    team: z
      .string()
      .regex(
        new RegExp(`^${TEAM_NAME_PATTERN}(@${TEAM_REF_PATTERN})?$`),
        'a team is "name" or "name@ref" (ref: latest, an alias, v3 or 3)',
      )
      .openapi({ example: "planpath" }),
    input: SolveInputSchema,
    options: SolveOptionsSchema.optional(),
  })
  .openapi("SolveRequest");
export type SolveRequest = z.infer<typeof SolveRequestSchema>;

export const TurnEventSchema = z
  .object({
    turn: z.number().int(),
    agent: z.string(),
    role: z.string(),
    policy: z.string(),
    prompt: z.string(),
    messages: z
      .array(z.object({ role: z.string(), content: z.string() }))
      .optional()
      .openapi({ description: "The observation as chat messages (prompt is their text)." }),
    completion: z.string(),
    promptTokens: z.number().int(),
    completionTokens: z.number().int(),
    ms: z.number(),
    teamReward: z.number(),
    done: z.boolean(),
  })
  .openapi("TurnEvent");

export const UsageSchema = z
  .record(z.string(), z.object({ calls: z.number(), promptTokens: z.number(), completionTokens: z.number() }))
  .openapi("Usage", { description: "Per role." });

export const SolveResponseSchema = z
  .object({
    team: z.object({ name: z.string(), version: z.number().int() }),
    task: z.object({ id: z.string(), payload: z.unknown() }),
    answer: z.unknown(),
    solved: z.boolean().nullable().openapi({ description: "null when the environment cannot judge" }),
    teamReturn: z.number(),
    turns: z.array(TurnEventSchema).optional(),
    usage: UsageSchema,
    latencyMs: z.number(),
    seed: z.number().int().optional().openapi({ description: "The episode's seed (given or drawn)." }),
  })
  .openapi("SolveResponse");
export type SolveResponse = z.infer<typeof SolveResponseSchema>;

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.enum([
        "invalid_request",
        "unauthorized",
        "not_found",
        "payload_too_large",
        "request_timeout",
        "rate_limited",
        "deadline_exceeded",
        "overloaded",
        "unsupported",
        "internal",
      ]),
      message: z.string(),
      path: z
        .array(z.union([z.string(), z.number()]))
        .optional()
        .openapi({ description: 'Field path of the invalid input, e.g. ["options", "maxTurns"].' }),
    }),
  })
  .openapi("Error");

const EnvironmentRefSchema = z.object({ name: z.string(), options: z.record(z.string(), z.unknown()) });
const RoleSchema = z.object({ id: z.string(), policy: z.string() });
const EvalSchema = z.object({
  successRate: z.number(),
  ci95: z.tuple([z.number(), z.number()]),
  tasks: z.number().int(),
  meanTeamReturn: z.number(),
});

export const TeamListSchema = z
  .object({
    teams: z.array(
      z.object({
        name: z.string(),
        versions: z.array(z.number().int()),
        aliases: z.record(z.string(), z.number().int()),
        latest: z.object({
          version: z.number().int(),
          environment: EnvironmentRefSchema,
          roles: z.array(RoleSchema),
          eval: EvalSchema.optional(),
        }),
      }),
    ),
  })
  .openapi("TeamList");

/** The published manifest (see @troupe/teams TeamManifestSchema for the strict version). */
export const TeamManifestResponseSchema = z
  .looseObject({
    schemaVersion: z.literal(1),
    name: z.string(),
    version: z.number().int(),
    createdAt: z.string(),
    environment: EnvironmentRefSchema,
    team: z.looseObject({ specialisation: z.enum(["shared", "per-role"]) }),
    roles: z.array(RoleSchema),
    policies: z.record(z.string(), z.unknown()),
    eval: EvalSchema.optional(),
    source: z.looseObject({ runId: z.string(), step: z.number().int() }),
  })
  .openapi("TeamManifest");

const count = z.number().int().min(0);

export const ServerStatsSchema = z
  .object({
    processes: count.openapi({
      description: "Server processes counted (with --workers: the workers and the primary).",
    }),
    requests: count,
    byStatus: z.record(z.string(), count).openapi({ description: "Answers per HTTP status." }),
    rateLimited: count,
    solves: count,
    inFlightSolves: count,
    clientAborts: count,
    cpuMs: z
      .number()
      .min(0)
      .openapi({ description: "CPU time of the server's processes (user + system), ms." }),
    ortRuns: count.openapi({
      description: "ONNX Runtime session runs (the embedded engine's forward passes).",
    }),
    ortCpuMs: z
      .number()
      .min(0)
      .openapi({ description: "CPU time inside those runs, ms: the model's share of cpuMs." }),
  })
  .openapi("ServerStats");

export const HealthSchema = z
  .object({
    ok: z.literal(true),
    stats: ServerStatsSchema.optional().openapi({
      description: "The whole server's counters since it started (Node; a Worker isolate has none).",
    }),
  })
  .openapi("Health");
