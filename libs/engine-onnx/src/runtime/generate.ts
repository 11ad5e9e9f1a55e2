/**
 * Batched sampling with a KV cache. Prompts are left-padded so every row's next token sits in the
 * last column; their prefill (16 rows a run, each run attending only to its own prompts) fills a
 * cache allocated once for prompt + maxTokens columns, then
 * each step feeds one token per row through the single-token step graph, which returns only that
 * token's keys/values (written into the cache by the runner; nothing copies the whole cache). With
 * a `weightsVersion` the step session has the weights baked in (pre-packed by ORT). Every row
 * samples with its own `Rng(deriveSeed(seed))`, drawing exactly one number per token, so a
 * completion does not depend on what else is in the batch.
 *
 * Ids the tokenizer cannot produce (a model vocabulary padded past the tokenizer's) are never
 * sampled: the sampler reads only the logits of the tokenizer's ids (as if the others were −∞).
 */
import { type Completion, deriveSeed, Rng, type SamplingParams } from "@troupe/core";
import { sampleToken, type Tokenizer } from "@troupe/engine";
import { copyCacheRow, copyRows, type FixedKvCache } from "./kv-cache.ts";
import { type PaddedBatch, padBatch } from "./padding.ts";
import type { ModelRunner } from "./runner.ts";
import type { FloatArray } from "./session.ts";
import type { HostWeights } from "./weight-feeds.ts";

/**
 * Prompts prefilled in one run at most. A prefill's cost per row grows with its rows past a few
 * dozen (its attention scores are rows × T × T, fresh memory every run): into a cache of T columns
 * (attending over them too) the tiny team's 80-token prompts cost 0.26 ms a row 16 at a time and
 * 1.4 ms a row 200 at a time, and an evaluation's 500-row prefill of the default recipe 14 ms a row.
 */
export const PREFILL_ROWS = 16;

export interface GenerateOptions {
  /**
   * A number that changes whenever the weights change (the engine passes its count of weight
   * updates). With it the cached decode session bakes the weights in as constants, which ORT
   * pre-packs once (≈ 2× faster steps for small models), rebuilt when the version changes.
   * Without it the weights are session inputs, always current.
   */
  readonly weightsVersion?: number;
}

export async function generateBatch(
  runner: ModelRunner,
  weights: HostWeights,
  tokenizer: Tokenizer,
  prompts: readonly (readonly number[])[],
  seeds: readonly number[],
  sampling: SamplingParams,
  options: GenerateOptions = {},
): Promise<Completion[]> {
  const B = prompts.length;
  if (B === 0) return [];
  runner.checkTokens(prompts.map((p) => ({ promptTokenIds: p, completionTokenIds: [] })));
  const V = runner.config.vocab_size;
  const usable = Math.min(V, tokenizer.vocabSize);
  const rows = prompts.map((p, b) => new SequenceSampler(p, seeds[b]!, sampling, tokenizer, V, usable));
  const padded = padBatch(prompts, "left", tokenizer.padTokenId);
  // A prefill of the left-padded prompts, then one column per step, all written into a cache
  // allocated once for prompt + maxTokens columns.
  const cache = runner.decoder.fixedCache(B, padded.time + sampling.maxTokens);
  const versioned = { weightsVersion: options.weightsVersion };
  let logits = await prefill(runner, weights, padded, cache, versioned);
  const allValid = new Uint8Array(B).fill(1);
  // Finished rows leave the batch (as in continuous batching): `order[k]` is the sequence in cache
  // row k, and the steps run over the first `live.batch` rows only. Answers end at very different
  // lengths (an evaluation of the default recipe: 35% of the row-steps of a batch that waits for
  // its longest answer are live), so the later steps shrink.
  const order = rows.map((_, b) => b);
  let live = cache;
  for (let n = 0; n < sampling.maxTokens; n++) {
    order.forEach((b, k) => rows[b]!.sample(logits, k));
    live = dropFinished(live, order, rows);
    if (live.batch === 0) break;
    // One new column: each live row's last token.
    const ids = BigInt64Array.from(order, (b) => BigInt(rows[b]!.lastToken));
    const positions = Int32Array.from(order, (b) => rows[b]!.nextPosition);
    const valid = allValid.subarray(0, live.batch);
    logits = await runner.decoder.cachedDecodeStep(weights, ids, positions, valid, live, versioned);
  }
  return rows.map((r) => r.completion());
}

/**
 * The prompts' prefill, `PREFILL_ROWS` rows a run. Each run attends only to its own prompts (a
 * past of zero columns, `DecodeRunner.prefill`) and its keys/values are written into columns [0, T)
 * of its rows of the cache: a run into the cache itself would attend over the rows' empty columns
 * too (prompt + maxTokens of them, masked), more than twice the attention. Returns the logits [B·V].
 */
async function prefill(
  runner: ModelRunner,
  weights: HostWeights,
  padded: PaddedBatch,
  cache: FixedKvCache,
  versioned: { readonly weightsVersion?: number | undefined },
): Promise<FloatArray> {
  const B = cache.batch;
  const T = padded.time;
  const C = cache.capacity;
  const V = runner.config.vocab_size;
  const shape = { columns: T, kvHeads: runner.config.num_key_value_heads, headDim: runner.config.head_dim };
  for (let start = 0; start < B; start += PREFILL_ROWS) {
    const end = Math.min(B, start + PREFILL_ROWS);
    const out = await runner.decoder.prefill(
      weights,
      padded.ids.subarray(start * T, end * T),
      padded.positions.subarray(start * T, end * T),
      padded.valid.subarray(start * T, end * T),
      end - start,
      versioned,
    );
    copyRows(cache, out, shape, { from: 0, to: start, count: end - start });
    for (let b = start; b < end; b++) cache.valid.set(padded.valid.subarray(b * T, (b + 1) * T), b * C);
    cache.logits.set(out.logits.subarray(0, (end - start) * V), start * V);
  }
  cache.length = T;
  return cache.logits;
}

/**
 * The cache without its finished rows: each finished row k takes the last live row's keys, values
 * and valid flags (one row copied per finished sequence, never the batch), `order` is updated in
 * place, and the result views the first rows of the same arrays (rows are their outermost
 * dimension), so the next step runs over the live rows alone.
 */
function dropFinished(cache: FixedKvCache, order: number[], rows: readonly SequenceSampler[]): FixedKvCache {
  let batch = cache.batch;
  for (let k = batch - 1; k >= 0; k--) {
    if (!rows[order[k]!]!.done) continue;
    const last = batch - 1;
    if (k !== last) {
      copyCacheRow(cache, last, k);
      order[k] = order[last]!;
    }
    order.pop();
    batch--;
  }
  return batch === cache.batch ? cache : cacheRows(cache, 0, batch, cache.length);
}

/** Rows [start, end) of a cache as a cache of their own: views of the same arrays, `length` columns filled. */
function cacheRows(cache: FixedKvCache, start: number, end: number, length = 0): FixedKvCache {
  const C = cache.capacity;
  const rowValues = cache.keys[0]!.length / cache.batch;
  const V = cache.logits.length / cache.batch;
  return {
    batch: end - start,
    capacity: C,
    length,
    keys: cache.keys.map((a) => a.subarray(start * rowValues, end * rowValues)),
    values: cache.values.map((a) => a.subarray(start * rowValues, end * rowValues)),
    valid: cache.valid.subarray(start * C, end * C),
    logits: cache.logits.subarray(start * V, end * V),
  };
}

/**
 * One sequence's sampling: its own `Rng`, its tokens, log-probs and finish reason. Batched
 * generation (above) and continuous batching (continuous.ts) both sample through it, so a
 * sequence's tokens depend only on its logits and its seed, never on its neighbours in a batch.
 */
export class SequenceSampler {
  readonly tokens: number[] = [];
  readonly logprobs: number[] = [];
  finish: "stop" | "length" | undefined;
  private readonly rng: Rng;
  private readonly stopIds: ReadonlySet<number>;

  constructor(
    readonly prompt: readonly number[],
    seed: number,
    readonly sampling: SamplingParams,
    private readonly tokenizer: Tokenizer,
    /** Logits per row (vocab_size), of which the first `usable` ids can be sampled. */
    private readonly vocab: number,
    private readonly usable: number,
  ) {
    // Rng(seed) of @troupe/core draws a first float ≈ 1 − seed·1.5e-8 for small seeds (xoroshiro128+
    // seeded with the raw integer), so nearby seeds would sample the same first token: the request
    // seed is scrambled through deriveSeed first.
    this.rng = new Rng(deriveSeed(seed, "onnx-sampler"));
    this.stopIds = new Set([...sampling.stopTokenIds, ...tokenizer.stopTokenIds]);
  }

  get done(): boolean {
    return this.finish !== undefined;
  }
  get lastToken(): number {
    return this.tokens[this.tokens.length - 1]!;
  }
  /** RoPE position of the last sampled token (the one the next step feeds). */
  get nextPosition(): number {
    return this.prompt.length + this.tokens.length - 1;
  }

  /**
   * Samples the next token from row `b` of `logits` [B·V] (exactly one draw of the RNG). Only the
   * first `usable` ids are read: the others would be −∞, probability exactly 0, so leaving them out
   * draws the same token with the same log-probability, at half the cost for the byte tokenizer.
   */
  sample(logits: FloatArray, b: number): void {
    const V = this.vocab;
    const row = logits.subarray(b * V, b * V + this.usable);
    const { tokenId, logprob } = sampleToken(row, this.sampling, this.rng);
    this.tokens.push(tokenId);
    this.logprobs.push(logprob);
    const stop = this.sampling.stop;
    if (this.stopIds.has(tokenId)) this.finish = "stop";
    else if (stop.length > 0 && firstStop(this.tokenizer.decode(this.tokens), stop) >= 0)
      this.finish = "stop";
    else if (this.tokens.length >= this.sampling.maxTokens) this.finish = "length";
  }

  completion(): Completion {
    const ids = this.tokens;
    const last = ids[ids.length - 1];
    const textIds =
      this.finish === "stop" && last !== undefined && this.stopIds.has(last) ? ids.slice(0, -1) : ids;
    let text = this.tokenizer.decode(textIds);
    const cut = firstStop(text, this.sampling.stop);
    if (cut >= 0) text = text.slice(0, cut);
    return {
      text,
      promptTokenIds: [...this.prompt],
      tokenIds: ids,
      logprobs: this.logprobs,
      finishReason: this.finish ?? "length",
    };
  }
}

/** Index of the earliest occurrence of any stop string, −1 if none. */
function firstStop(text: string, stops: readonly string[]): number {
  let best = -1;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (best < 0 || i < best)) best = i;
  }
  return best;
}
