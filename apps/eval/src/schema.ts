/**
 * The evaluation report: JSON, schema-versioned and validated with zod wherever it is read (a
 * file, the store, a gate's baseline). One report holds one entry per evaluated subject (a
 * published team version, or a run's checkpoint at a step) and the suite it was run with.
 */
import { z } from "zod";

export const EVAL_REPORT_SCHEMA_VERSION = 1;

/** An estimate with its 95% interval: `method` says which (Wilson over tasks, or a t-interval over tasks). */
export const EstimateSchema = z.strictObject({
  value: z.number(),
  low: z.number(),
  high: z.number(),
  /** Units the interval is over (tasks). */
  n: z.number().int().min(0),
  method: z.enum(["wilson", "t"]),
});
export type Estimate = z.infer<typeof EstimateSchema>;

export const SuiteSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]*$/, { error: "expected a name of a–z, 0–9, '.', '_', '-'" })
    .max(64),
  /** Held-out (test split) tasks per subject: the first `tasks` of the environment's test stream. */
  tasks: z.number().int().min(1).max(100_000),
  /** Sampled episodes per task for pass@k and the test pass rate (at `temperature`). */
  samples: z.number().int().min(1).max(1000),
  temperature: z.number().min(0).max(10),
  topP: z.number().gt(0).max(1).default(1),
  /** The k of pass@k; those above `samples` are left out. */
  k: z.array(z.number().int().min(1)).min(1).default([1, 3, 5, 10]),
  /** Base of every sampling seed of the suite (episodes are reproducible). */
  seed: z.number().int().min(0).default(0),
});
export type Suite = z.infer<typeof SuiteSchema>;

const UsageSchema = z.strictObject({
  calls: z.number().int().min(0),
  promptTokens: z.number().int().min(0),
  completionTokens: z.number().int().min(0),
  /** Per episode (the suite's sampled and greedy episodes together). */
  promptTokensPerEpisode: z.number(),
  completionTokensPerEpisode: z.number(),
  /** Mean generation time of one of this role's calls (its stage's time). */
  msPerCall: z.number(),
});
export type RoleUsageSummary = z.infer<typeof UsageSchema>;

const LatencySchema = z.strictObject({
  episodes: z.number().int().min(0),
  meanMs: z.number(),
  p50Ms: z.number(),
  p95Ms: z.number(),
});

const TurnSchema = z.strictObject({
  turn: z.number().int(),
  agent: z.string(),
  role: z.string(),
  prompt: z.string(),
  completion: z.string(),
  teamReward: z.number(),
});

/** One episode shown in the report (the greedy episodes that did best, worst and at the median). */
export const ExampleSchema = z.strictObject({
  label: z.enum(["best", "median", "worst"]),
  taskId: z.string(),
  solved: z.boolean().nullable(),
  teamReturn: z.number(),
  turns: z.array(TurnSchema),
});
export type Example = z.infer<typeof ExampleSchema>;

export const SubjectSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("team"),
    name: z.string(),
    version: z.number().int().min(1),
    /** What was asked for: `latest`, an alias, or a version. */
    ref: z.string(),
  }),
  z.strictObject({
    kind: z.literal("run"),
    runId: z.string(),
    step: z.number().int().min(0),
    /** The run's warm start (the team before RL; `step` is the warm start's last step), not an RL step. */
    warmStart: z.literal(true).optional(),
  }),
]);
export type Subject = z.infer<typeof SubjectSchema>;

export const EntrySchema = z.strictObject({
  subject: SubjectSchema,
  /** `name@vN` or `run <id>@step N`: how tables name the entry. */
  label: z.string(),
  /** What the gate matches a baseline entry on: the team's name (or the run id) and its environment. */
  key: z.string(),
  /** A test-time baseline the subject answered as (eval run --arms), absent for the team itself. */
  arm: z.enum(["single", "naive-concat", "sequential", "discussion"]).optional(),
  environment: z.strictObject({ name: z.string(), options: z.record(z.string(), z.unknown()) }),
  backend: z.enum(["onnx", "openai", "torch"]),
  tasks: z.number().int().min(0),
  samples: z.number().int().min(0),
  metrics: z.strictObject({
    /** One episode per task with the subject's own sampling (a team's manifest: greedy for trained teams). */
    success: EstimateSchema,
    meanTeamReturn: EstimateSchema,
    /** Unbiased pass@k (Chen et al. 2021) from `samples` episodes per task, averaged over tasks. */
    passAtK: z.record(z.string().regex(/^\d+$/), EstimateSchema),
    /** Mean fraction of the task's tests passed, where the environment runs tests (coding). */
    testPassRate: EstimateSchema.optional(),
    /** Writing: each reward tier's mean over the sampled episodes (structure, coordination, vocabulary, style, total). */
    tiers: z.record(z.string(), EstimateSchema).optional(),
    /**
     * `success` by task difficulty, easiest first, where the environment measures one (the games:
     * the length of an optimal plan): which tasks a team still fails.
     */
    byDifficulty: z.array(z.strictObject({ difficulty: z.number(), success: EstimateSchema })).optional(),
  }),
  usage: z.record(z.string(), UsageSchema),
  latency: LatencySchema,
  examples: z.array(ExampleSchema),
  seconds: z.number(),
});
export type EvalEntry = z.infer<typeof EntrySchema>;

export const EvalReportSchema = z.strictObject({
  schemaVersion: z.literal(EVAL_REPORT_SCHEMA_VERSION),
  kind: z.literal("troupe-eval-report"),
  createdAt: z.string(),
  suite: SuiteSchema,
  /** Where the subjects were read from (a store URI). */
  store: z.string(),
  entries: z.array(EntrySchema),
});
export type EvalReport = z.infer<typeof EvalReportSchema>;

/** A report that fails its schema: one line naming the file and the field. */
export class ReportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReportError";
  }
}

export function parseReport(value: unknown, where: string): EvalReport {
  const parsed = EvalReportSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.length ? `${issue.path.join(".")}: ` : "";
    throw new ReportError(
      `${where}: not an eval report (schemaVersion ${EVAL_REPORT_SCHEMA_VERSION}): ${path}${issue.message}`,
    );
  }
  return parsed.data;
}

export function parseReportText(text: string, where: string): EvalReport {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ReportError(`${where}: not JSON (${(error as Error).message})`);
  }
  return parseReport(value, where);
}
