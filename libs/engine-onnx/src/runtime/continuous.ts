/**
 * Continuous batching for one policy: concurrent generations share every forward pass.
 *
 * A call queues one sequence. A loop runs while there is work, one iteration at a time through
 * the engine's queue (so a train step or a scoring run still never interleaves with a graph run):
 *   1. leave: sequences whose caller gave up (AbortSignal) free their row;
 *   2. join: waiting sequences (up to `prefillRows` at a time, `maxBatch` rows in all) are
 *      prefilled together — left-padded as in `generateBatch` — sample their first token, and get
 *      a row of the ragged KV cache;
 *   3. step: one single-token decode step over every row, each at its own length; every row
 *      samples its next token, and finished rows leave (the last row moves into the freed one).
 * Every sequence samples through its own `SequenceSampler` (its own seeded RNG), so its tokens do
 * not depend on who else is in the batch: at temperature 0 they are those of unbatched generation.
 * At most `maxQueued` sequences wait; past it a call fails at once with `GenerationQueueFullError`
 * (a server answers 503), so a burst costs bounded memory. The cache is dropped when idle.
 */
import type { Completion, SamplingParams } from "@troupe/core";
import type { Tokenizer } from "@troupe/engine";
import { PREFILL_ROWS, SequenceSampler } from "./generate.ts";
import { copyCacheRow, copyRows, type RaggedKvCache } from "./kv-cache.ts";
import { padBatch } from "./padding.ts";
import type { ModelRunner } from "./runner.ts";
import type { FloatArray } from "./session.ts";
import type { HostWeights } from "./weight-feeds.ts";

export interface ContinuousBatchingOptions {
  /** Sequences decoded together at most (rows of the KV cache). */
  readonly maxBatch?: number;
  /** Sequences waiting for a row at most; beyond, a call is refused (`GenerationQueueFullError`). */
  readonly maxQueued?: number;
  /** Joiners prefilled in one run at most (the rest join at the next steps). */
  readonly prefillRows?: number;
}

export const DEFAULT_MAX_BATCH = 256;
export const DEFAULT_MAX_QUEUED = 1024;
/** Cache columns are allocated in multiples of this, so a slightly longer joiner rarely reallocates. */
const COLUMN_STEP = 32;

/** The options with their defaults; throws naming a bound that is not an integer ≥ 1. */
export function batchingLimits(options: ContinuousBatchingOptions): Required<ContinuousBatchingOptions> {
  const limits = {
    maxBatch: options.maxBatch ?? DEFAULT_MAX_BATCH,
    maxQueued: options.maxQueued ?? DEFAULT_MAX_QUEUED,
    // Joiners are prefilled `PREFILL_ROWS` at a time (see generate.ts), one group per step.
    prefillRows: options.prefillRows ?? PREFILL_ROWS,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`continuous batching: ${name} must be an integer ≥ 1, got ${value}`);
  }
  return limits;
}

/** Too many sequences already wait: retry later. */
export class GenerationQueueFullError extends Error {
  constructor(
    readonly policy: string,
    readonly limit: number,
  ) {
    super(`policy "${policy}": ${limit} generations are already waiting (maxQueued); retry later`);
    this.name = "GenerationQueueFullError";
  }
}

/** What one iteration reads from the engine: the policy's current weights and graphs. */
export interface BatchModel {
  readonly runner: ModelRunner;
  readonly weights: HostWeights;
  readonly tokenizer: Tokenizer;
  readonly weightsVersion: number;
}

interface Sequence {
  readonly sampler: SequenceSampler;
  readonly signal: AbortSignal | undefined;
  readonly resolve: (completion: Completion) => void;
  readonly reject: (error: unknown) => void;
}

export interface ContinuousBatchingStats {
  readonly waiting: number;
  readonly active: number;
  /** Decode steps and prefills run, and the most rows one step has carried. */
  readonly steps: number;
  readonly prefills: number;
  readonly maxRows: number;
}

export class ContinuousBatcher {
  readonly maxBatch: number;
  readonly maxQueued: number;
  readonly prefillRows: number;
  private readonly waiting: Sequence[] = [];
  /** Row r of the cache holds active[r]. */
  private readonly active: Sequence[] = [];
  private cache: RaggedKvCache | undefined;
  private running = false;
  private closed = false;
  private counts = { steps: 0, prefills: 0, maxRows: 0 };

  constructor(
    private readonly policy: string,
    private readonly model: () => BatchModel,
    /** The engine's queue: runs one iteration after every earlier engine call. */
    private readonly exclusive: <T>(fn: () => Promise<T>) => Promise<T>,
    options: ContinuousBatchingOptions = {},
  ) {
    ({
      maxBatch: this.maxBatch,
      maxQueued: this.maxQueued,
      prefillRows: this.prefillRows,
    } = batchingLimits(options));
  }

  /** Generates one completion of `prompt` (token ids), joining the running batch. */
  generate(
    prompt: readonly number[],
    seed: number,
    sampling: SamplingParams,
    signal?: AbortSignal,
  ): Promise<Completion> {
    if (this.closed) return Promise.reject(this.closedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.waiting.length >= this.maxQueued)
      return Promise.reject(new GenerationQueueFullError(this.policy, this.maxQueued));
    const { runner, tokenizer } = this.model();
    try {
      runner.checkTokens([{ promptTokenIds: prompt, completionTokenIds: [] }]);
    } catch (error) {
      return Promise.reject(error);
    }
    const V = runner.config.vocab_size;
    const sampler = new SequenceSampler(
      prompt,
      seed,
      sampling,
      tokenizer,
      V,
      Math.min(V, tokenizer.vocabSize),
    );
    return new Promise<Completion>((resolve, reject) => {
      this.waiting.push({ sampler, signal, resolve, reject });
      if (!this.running) void this.loop();
    });
  }

  stats(): ContinuousBatchingStats {
    return { waiting: this.waiting.length, active: this.active.length, ...this.counts };
  }

  /** Fails every queued and running sequence; later calls are refused. */
  close(): void {
    this.closed = true;
    this.failAll(this.closedError());
  }

  private closedError(): Error {
    return new Error(`policy "${this.policy}": the engine is closed`);
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length + this.active.length > 0)
        await this.exclusive(() => this.iteration(this.model()));
    } catch (error) {
      // A failed run leaves the batch in an unknown state: every sequence in it fails with the error.
      this.failAll(error);
    } finally {
      this.running = false;
      this.cache = undefined; // idle: give the memory back
    }
  }

  private failAll(error: unknown): void {
    for (const q of this.waiting.splice(0)) q.reject(error);
    for (const q of this.active.splice(0)) q.reject(error);
  }

  private async iteration(m: BatchModel): Promise<void> {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const q = this.waiting[i]!;
      if (q.signal?.aborted) {
        this.waiting.splice(i, 1);
        q.reject(q.signal.reason);
      }
    }
    for (let r = this.active.length - 1; r >= 0; r--) {
      const q = this.active[r]!;
      if (q.signal?.aborted) {
        this.leave(r);
        q.reject(q.signal.reason);
      }
    }
    const room = Math.min(this.maxBatch - this.active.length, this.prefillRows);
    if (room > 0 && this.waiting.length > 0) await this.prefill(m, this.waiting.splice(0, room));
    if (this.active.length > 0) await this.step(m);
  }

  /** Prefills the joiners together, samples their first token, and gives the unfinished ones a row. */
  private async prefill(m: BatchModel, joiners: Sequence[]): Promise<void> {
    const padded = padBatch(
      joiners.map((q) => q.sampler.prompt),
      "left",
      m.tokenizer.padTokenId,
    );
    const T = padded.time;
    const prefilled = await m.runner.decoder.prefill(
      m.weights,
      padded.ids,
      padded.positions,
      padded.valid,
      joiners.length,
      {
        weightsVersion: m.weightsVersion,
      },
    );
    const logits = prefilled.logits;
    this.counts.prefills++;
    if (this.closed) {
      // close() failed the queue and the rows while this prefill ran; the joiners were in neither.
      for (const q of joiners) q.reject(this.closedError());
      return;
    }
    const staying: number[] = [];
    joiners.forEach((q, j) => {
      q.sampler.sample(logits, j);
      if (q.sampler.done) q.resolve(q.sampler.completion());
      else staying.push(j);
    });
    if (staying.length === 0) return;
    // A row needs its prompt columns (with pads) and one per fed token.
    const columns = Math.max(...staying.map((j) => T + joiners[j]!.sampler.sampling.maxTokens));
    const cache = this.ensureCache(m.runner, this.active.length + staying.length, columns);
    const { num_key_value_heads: kvHeads, head_dim: headDim } = m.runner.config;
    const C = cache.capacity;
    for (const j of staying) {
      const r = this.active.length;
      copyRows(cache, prefilled, { columns: T, kvHeads, headDim }, { from: j, to: r, count: 1 });
      cache.valid.fill(0, r * C, (r + 1) * C);
      cache.valid.set(padded.valid.subarray(j * T, (j + 1) * T), r * C);
      cache.lengths[r] = T;
      this.active.push(joiners[j]!);
    }
  }

  /** One decode step over every row; finished sequences resolve and leave. */
  private async step(m: BatchModel): Promise<void> {
    const B = this.active.length;
    const ids = BigInt64Array.from(this.active, (q) => BigInt(q.sampler.lastToken));
    const positions = Int32Array.from(this.active, (q) => q.sampler.nextPosition);
    const logits: FloatArray = await m.runner.decoder.raggedDecodeStep(
      m.weights,
      ids,
      positions,
      this.cache!,
      {
        weightsVersion: m.weightsVersion,
      },
    );
    this.counts.steps++;
    this.counts.maxRows = Math.max(this.counts.maxRows, B);
    if (this.closed) return; // close() already failed every row
    this.active.forEach((q, b) => q.sampler.sample(logits, b));
    for (let r = B - 1; r >= 0; r--) {
      const q = this.active[r]!;
      if (q.sampler.done) {
        this.leave(r);
        q.resolve(q.sampler.completion());
      }
    }
  }

  /** Frees row r: the last row moves into it (one sequence's cache copied, not the batch's). */
  private leave(r: number): void {
    const last = this.active.length - 1;
    if (r !== last) {
      const cache = this.cache!;
      copyCacheRow(cache, last, r);
      cache.lengths[r] = cache.lengths[last]!;
      this.active[r] = this.active[last]!;
    }
    this.active.pop();
  }

  /** A cache of at least `rows` rows and `columns` columns, keeping the active rows. */
  private ensureCache(runner: ModelRunner, rows: number, columns: number): RaggedKvCache {
    const old = this.cache;
    if (old !== undefined && old.rows >= rows && old.capacity >= columns) return old;
    // Rows double (up to maxBatch) and columns round up, so a growing batch reallocates rarely.
    const newRows = Math.min(this.maxBatch, Math.max(rows, 2 * (old?.rows ?? 4)));
    const capacity = Math.ceil(Math.max(columns, old?.capacity ?? 0) / COLUMN_STEP) * COLUMN_STEP;
    const cache = runner.decoder.raggedCache(newRows, capacity);
    if (old !== undefined) {
      const { num_key_value_heads: kvHeads, head_dim: headDim } = runner.config;
      const oldC = old.capacity;
      copyRows(
        cache,
        old,
        { columns: oldC, kvHeads, headDim },
        { from: 0, to: 0, count: this.active.length },
      );
      for (let r = 0; r < this.active.length; r++) {
        cache.valid.set(old.valid.subarray(r * oldC, (r + 1) * oldC), r * capacity);
        cache.lengths[r] = old.lengths[r]!;
      }
    }
    this.cache = cache;
    return cache;
  }
}
