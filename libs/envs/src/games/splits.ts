/**
 * Train / validation / test splits for procedurally generated puzzles.
 *
 * Two layers:
 * 1. Seed streams: candidate i of split s is drawn from `Rng(deriveSeed(seed, env, s, i))`, so each
 *    split walks its own seed sequence and generation is reproducible.
 * 2. Hash buckets (the guarantee): every instance has a canonical *split key* (the canonical
 *    puzzle, or something coarser such as a Sudoku's solution grid); u = first 52 bits of
 *    stableHash(key) / 2^52 decides its split: u < test → test, u < test + validation →
 *    validation, else train. A split keeps only candidates whose bucket is its own, so two splits
 *    can never hold the same instance, whatever seeds, counts or generator options are used.
 * Within a split, instances are deduplicated by the stableHash of their canonical form.
 */
import { deriveSeed, Rng, type Split, stableHash, type Task } from "@troupe/core";
import { z } from "zod";
import { parseOptions } from "./options.ts";

export const SplitFractionsSchema = z
  .object({
    /** Share of the instance space reserved for test. */
    test: z.number().min(0).max(1).default(0.1),
    /** Share reserved for validation. */
    validation: z.number().min(0).max(1).default(0.1),
  })
  .refine((f) => f.test + f.validation <= 1, { message: "test + validation must be <= 1" });
export type SplitFractions = z.infer<typeof SplitFractionsSchema>;

export const DEFAULT_SPLIT_FRACTIONS: SplitFractions = { test: 0.1, validation: 0.1 };

/** The split an instance belongs to, from the hash of its canonical split key. */
export function splitOfKey(key: unknown, fractions: SplitFractions = DEFAULT_SPLIT_FRACTIONS): Split {
  const u = Number.parseInt(stableHash(key).slice(0, 13), 16) / 2 ** 52;
  if (u < fractions.test) return "test";
  if (u < fractions.test + fractions.validation) return "validation";
  return "train";
}

/** One generated instance: its payload, its canonical form (for dedup and ids) and its split key. */
export interface GeneratedInstance<Payload> {
  readonly payload: Payload;
  /** Canonical form of the instance; its stableHash is the task's identity. */
  readonly instanceKey: unknown;
  /** What decides the split (the instance itself, or a coarser key shared by related instances). */
  readonly splitKey: unknown;
}

export interface GenerateSplitArgs<Payload> {
  /** Environment name; part of the seed path and of task ids. */
  readonly env: string;
  readonly split: Split;
  readonly count: number;
  readonly seed: number;
  readonly fractions: SplitFractions;
  /** Candidates tried per requested task before giving up (the instance space may be too small). */
  readonly attemptsPerTask?: number;
  /** Consecutive candidates without a new task before giving up (an exhausted instance space). */
  readonly maxStall?: number;
  /**
   * Draws one candidate, or null to reject it. `inSplit(key)` tells whether a split key lands in
   * the requested split: generators call it as soon as they know the key, to skip expensive work
   * (Sudoku clue removal, the Sokoban solver) for candidates that would be thrown away.
   */
  readonly candidate: (
    rng: Rng,
    inSplit: (splitKey: unknown) => boolean,
  ) => GeneratedInstance<Payload> | null;
}

/** Generates `count` distinct tasks of one split. Task ids are `<env>-<split>-<hash prefix>`. */
export function generateSplitTasks<Payload>(args: GenerateSplitArgs<Payload>): Task<Payload>[] {
  const { env, split, count, seed, fractions } = args;
  if (!Number.isInteger(count) || count < 0)
    throw new Error(`${env}: count must be an integer >= 0, got ${count}`);
  if (!Number.isInteger(seed)) throw new Error(`${env}: seed must be an integer, got ${seed}`);
  const inSplit = (key: unknown) => splitOfKey(key, fractions) === split;
  const maxAttempts = count * (args.attemptsPerTask ?? 500) + 1000;
  const maxStall = args.maxStall ?? 20_000;
  const tasks: Task<Payload>[] = [];
  const seen = new Set<string>();
  let lastNew = 0;
  for (let i = 0; tasks.length < count; i++) {
    if (i >= maxAttempts || i - lastNew > maxStall) {
      throw new Error(
        `${env}: only ${tasks.length} of ${count} distinct ${split} instances after ${i} candidates; ` +
          "the instance space for these options is too small (enlarge the puzzle or ask for fewer tasks)",
      );
    }
    const instance = args.candidate(new Rng(deriveSeed(seed, env, split, i)), inSplit);
    if (instance === null || !inSplit(instance.splitKey)) continue;
    const hash = stableHash(instance.instanceKey);
    if (seen.has(hash)) continue;
    seen.add(hash);
    lastNew = i;
    tasks.push({ id: `${env}-${split}-${hash.slice(0, 16)}`, split, payload: instance.payload });
  }
  return tasks;
}

/** A game's generation options: its own fields and the split fractions. */
export type GenerationSchema = z.ZodObject<{ splitFractions: z.ZodType<SplitFractions, unknown> }>;

/** A game's task generator, `(split, count, options) → tasks`, with the game's name and options schema. */
export interface SplitTaskGenerator<S extends GenerationSchema, Payload> {
  (split: Split, count: number, options?: z.input<S> & { readonly seed?: number }): Task<Payload>[];
  /** Environment name; part of the seed path and of task ids. */
  readonly env: string;
  /** The generation options (without `seed`). */
  readonly schema: S;
}

/**
 * A game's task generator: options (the schema's fields and a `seed`) are parsed first, an error
 * naming the game and the bad field, then `draw` draws each instance with the parsed config (null:
 * rejected, draw again) and `keys` names its identity and split (see `generateSplitTasks`).
 */
export function splitTaskGenerator<S extends GenerationSchema, Payload>(
  env: string,
  schema: S,
  draw: (rng: Rng, config: z.output<S>, inSplit: (splitKey: unknown) => boolean) => Payload | null,
  keys: (payload: Payload) => Omit<GeneratedInstance<Payload>, "payload">,
): SplitTaskGenerator<S, Payload> {
  const strict = schema.strict();
  const generate = (split: Split, count: number, options?: z.input<S> & { readonly seed?: number }) => {
    const { seed = 0, ...rest } = options ?? {};
    const config = parseOptions(`${env} generation options`, strict, rest) as z.output<S>;
    return generateSplitTasks({
      env,
      split,
      count,
      seed,
      fractions: config.splitFractions,
      candidate: (rng, inSplit) => {
        const payload = draw(rng, config, inSplit);
        return payload === null ? null : { payload, ...keys(payload) };
      },
    });
  };
  return Object.assign(generate, { env, schema });
}
