/**
 * The input of a solve and its options, validated before any model runs. A bad input fails with
 * `SolveInputError`, whose `path` is the field:
 *   input:   ["task", "payload", "grid", 3], ["generate", "seed"], …
 *   options: ["options", "sampling", "temperature"], ["options", "maxTurns"], …
 *
 * `{task}` takes either `{id?, split?, payload}` or, when the object has no `payload` key, the
 * payload itself (e.g. a Plan-Path puzzle `{rows, cols, grid, start, goal, optimal}`). The payload
 * is checked by the environment itself (its `reset`), so a served task obeys exactly the rules of
 * the tasks the team was trained on; the environment's message names the field, which becomes the path.
 */
import { type Environment, type Split, SplitSchema, stableHash, type Task } from "@troupe/core";
import type { RegisteredEnvironment } from "@troupe/envs/registry";
import { z } from "zod";

export type SolveInput = { task: unknown } | { generate: { split?: "test" | "train"; seed: number } };

export interface SolveOptions {
  /** Turns at most (≤ the team's maxTurns). */
  maxTurns?: number;
  sampling?: { temperature?: number; topP?: number; seed?: number; maxTokens?: number };
  /** Per-request deadline: solve rejects with SolveAbortedError once it fires. */
  signal?: AbortSignal;
}

export class SolveInputError extends Error {
  constructor(
    message: string,
    readonly path: (string | number)[],
  ) {
    super(path.length ? `${path.join(".")}: ${message}` : message);
    this.name = "SolveInputError";
  }
}

/** Most tokens one turn may generate, whatever the request asks. */
export const MAX_TOKENS_LIMIT = 4096;

const GenerateSchema = z.strictObject({
  split: z.enum(["test", "train"]).default("test"),
  seed: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1),
});

const TaskEnvelopeSchema = z.strictObject({
  id: z.string().min(1).max(200).optional(),
  split: SplitSchema.optional(),
  payload: z.unknown(),
});

export const SolveSamplingSchema = z.strictObject({
  temperature: z.number().min(0).max(10).optional(),
  topP: z.number().gt(0).max(1).optional(),
  seed: z
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1)
    .optional(),
  maxTokens: z.number().int().min(1).max(MAX_TOKENS_LIMIT).optional(),
});

function fail(error: z.ZodError, prefix: (string | number)[]): never {
  const issue = error.issues[0]!;
  const path = [...prefix, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
  if (issue.code === "unrecognized_keys")
    throw new SolveInputError(`unknown key "${issue.keys[0]}"`, [...path, issue.keys[0]!]);
  throw new SolveInputError(issue.message, path);
}

export interface ParsedSolveOptions {
  readonly maxTurns: number;
  readonly sampling: z.infer<typeof SolveSamplingSchema>;
}

export function parseSolveOptions(options: SolveOptions, teamMaxTurns: number): ParsedSolveOptions {
  const parsed = solveOptionsSchema(teamMaxTurns).safeParse(options);
  if (!parsed.success) fail(parsed.error, ["options"]);
  return { maxTurns: parsed.data.maxTurns, sampling: parsed.data.sampling };
}

/**
 * The options' schema for a team of `teamMaxTurns` turns, built once per turn count: building a
 * zod schema costs more than parsing with it (0.7 ms a solve, as much as a tiny team's forward passes).
 */
const optionsSchemas = new Map<number, ReturnType<typeof buildOptionsSchema>>();
function solveOptionsSchema(teamMaxTurns: number) {
  let schema = optionsSchemas.get(teamMaxTurns);
  if (schema === undefined) {
    schema = buildOptionsSchema(teamMaxTurns);
    optionsSchemas.set(teamMaxTurns, schema);
  }
  return schema;
}

function buildOptionsSchema(teamMaxTurns: number) {
  return z.strictObject({
    maxTurns: z
      .number()
      .int()
      .min(1)
      .max(teamMaxTurns, `the team plays at most ${teamMaxTurns} turns`)
      .default(teamMaxTurns),
    sampling: SolveSamplingSchema.default({}),
    signal: z.custom<AbortSignal>((s) => s instanceof AbortSignal, "must be an AbortSignal").optional(),
  });
}

/** Splits an environment's payload error ("…: payload: grid.3: needs 5 columns") into a path and the reason. */
export function payloadError(message: string): { path: (string | number)[]; detail: string } {
  const toPath = (field: string) => [
    "task",
    "payload",
    ...field.split(".").map((p) => (/^\d+$/.test(p) ? Number(p) : p)),
  ];
  const named = /: payload: ([^\s:]+): (.*)$/s.exec(message);
  if (named && named[1] !== "(root)") return { path: toPath(named[1]!), detail: named[2]! };
  const dotted = /: payload\.([\w.]+) (.*)$/s.exec(message);
  if (dotted) return { path: toPath(dotted[1]!), detail: `${dotted[1]} ${dotted[2]}` };
  return { path: ["task", "payload"], detail: named?.[2] ?? message };
}

/** Generated tasks kept per environment (most recently used last); each is a few hundred bytes. */
export const GENERATED_TASK_CACHE_SIZE = 4096;
const generatedTasks = new WeakMap<RegisteredEnvironment, Map<string, Task<unknown>>>();

/**
 * The environment's task for (split, seed), generated once and then remembered: generating one
 * draws and hashes about ten candidate puzzles (0.4 ms of a 4-turn tiny team's 4 ms solve), and a
 * task is a pure function of (environment, split, seed). Tasks are never mutated by an episode (the
 * trainer runs one task object for a whole group), so the cached object is handed out as it is.
 */
export function generatedTask(registered: RegisteredEnvironment, split: Split, seed: number): Task<unknown> {
  let tasks = generatedTasks.get(registered);
  if (tasks === undefined) generatedTasks.set(registered, (tasks = new Map()));
  const key = `${split}/${seed}`;
  let task = tasks.get(key);
  if (task !== undefined) {
    tasks.delete(key); // re-inserted below: Map order is the LRU order
  } else {
    task = registered.generateTasks(split, 1, seed)[0]!;
    if (tasks.size >= GENERATED_TASK_CACHE_SIZE) tasks.delete(tasks.keys().next().value!);
  }
  tasks.set(key, task);
  return task;
}

/**
 * The task to solve: generated, or given and checked by the environment (reset with it).
 * Returns the task; throws SolveInputError naming the field.
 */
export async function resolveTask(
  registered: RegisteredEnvironment,
  env: Environment<unknown, unknown>,
  input: unknown,
): Promise<Task<unknown>> {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new SolveInputError("the input must be an object: {task} or {generate: {split, seed}}", []);
  }
  const keys = Object.keys(input);
  if (keys.length !== 1 || (keys[0] !== "task" && keys[0] !== "generate")) {
    throw new SolveInputError(
      `the input must have exactly one key, "task" or "generate" (got ${keys.map((k) => `"${k}"`).join(", ") || "none"})`,
      keys.find((k) => k !== "task" && k !== "generate") !== undefined
        ? [keys.find((k) => k !== "task" && k !== "generate")!]
        : [],
    );
  }
  if ("generate" in input) {
    const parsed = GenerateSchema.safeParse(input.generate);
    if (!parsed.success) fail(parsed.error, ["generate"]);
    return generatedTask(registered, parsed.data.split, parsed.data.seed);
  }
  const raw = (input as { task: unknown }).task;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new SolveInputError("a task is an object: {id?, payload} or the payload itself", ["task"]);
  }
  let task: Task<unknown>;
  if ("payload" in raw) {
    const parsed = TaskEnvelopeSchema.safeParse(raw);
    if (!parsed.success) fail(parsed.error, ["task"]);
    const { id, split, payload } = parsed.data;
    task = { id: id ?? `input-${stableHash(payload ?? null).slice(0, 16)}`, split: split ?? "test", payload };
  } else {
    task = { id: `input-${stableHash(raw).slice(0, 16)}`, split: "test", payload: raw };
  }
  try {
    await env.reset(task, 0);
  } catch (error) {
    const { path, detail } = payloadError((error as Error).message);
    throw new SolveInputError(detail, path);
  }
  return task;
}
