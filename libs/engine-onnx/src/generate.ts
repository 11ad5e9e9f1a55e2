/**
 * Batched sampling with a KV cache. Prompts are left-padded so every row's next token sits in the
 * last column; one prefill run fills a cache allocated once for prompt + maxTokens columns, then
 * each step feeds one token per row through the single-token step graph, which returns only that
 * token's keys/values (written into the cache by the runner; nothing copies the whole cache). With
 * a `weightsVersion` the step session has the weights baked in (pre-packed by ORT). Every row
 * samples with its own `Rng(deriveSeed(seed))`, drawing exactly one number per token, so a
 * completion does not depend on what else is in the batch.
 *
 * Rows whose ids the tokenizer cannot produce (a model vocabulary padded past the tokenizer's) are
 * never sampled: their logits are set to −∞ before warping.
 */
import { type Completion, deriveSeed, Rng, type SamplingParams } from "@troupe/core";
import { sampleToken, type Tokenizer } from "@troupe/engine";
import type { ort } from "./graph/session.ts";
import { padBatch } from "./model/host-inputs.ts";
import type { FloatArray, HostWeights, ModelRunner } from "./model/runner.ts";

export interface GenerateOptions {
  /** Use the KV cache (default); false recomputes the whole sequence every step (for benchmarks). */
  readonly kvCache?: boolean;
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
  const stopIds = new Set([...sampling.stopTokenIds, ...tokenizer.stopTokenIds]);
  // Rng(seed) of @troupe/core draws a first float ≈ 1 − seed·1.5e-8 for small seeds (xoroshiro128+
  // seeded with the raw integer), so nearby seeds would sample the same first token: the request
  // seed is scrambled through deriveSeed first.
  const rngs = seeds.map((s) => new Rng(deriveSeed(s, "onnx-sampler")));
  const tokens: number[][] = prompts.map(() => []);
  const logprobs: number[][] = prompts.map(() => []);
  const finish: ("stop" | "length" | undefined)[] = prompts.map(() => undefined);
  const kvCache = options.kvCache ?? true;
  // Full recomputation (no cache) feeds the same weight tensors to every step.
  const feeds: Record<string, ort.Tensor> = kvCache ? {} : runner.weightFeeds(weights, "decode");

  const padded = padBatch(prompts, "left", tokenizer.padTokenId);
  // With the cache: a prefill of the left-padded prompts, then one column per step, all written
  // into a cache allocated once for prompt + maxTokens columns.
  const cache = kvCache ? runner.fixedCache(B, padded.time + sampling.maxTokens) : undefined;
  const versioned = { weightsVersion: options.weightsVersion };
  let logits =
    cache === undefined
      ? (await runner.decodeStep(feeds, padded.ids, padded.positions, padded.valid, runner.emptyCache(B), B))
          .logits
      : await runner.cachedDecodeStep(weights, padded.ids, padded.positions, padded.valid, cache, versioned);
  const row = new Float64Array(V);
  const allValid = new Uint8Array(B).fill(1);
  for (let n = 0; n < sampling.maxTokens; n++) {
    for (let b = 0; b < B; b++) {
      if (finish[b] !== undefined) continue;
      sampleInto(row, logits, b, V, usable);
      const { tokenId, logprob } = sampleToken(row, sampling, rngs[b]!);
      tokens[b]!.push(tokenId);
      logprobs[b]!.push(logprob);
      if (stopIds.has(tokenId)) finish[b] = "stop";
      else if (sampling.stop.length > 0 && firstStop(tokenizer.decode(tokens[b]!), sampling.stop) >= 0)
        finish[b] = "stop";
      else if (tokens[b]!.length >= sampling.maxTokens) finish[b] = "length";
    }
    if (finish.every((f) => f !== undefined)) break;
    if (cache !== undefined) {
      // One new column: each row's last token (a finished row repeats its last one; it is ignored).
      const ids = BigInt64Array.from(tokens.map((t) => BigInt(t[t.length - 1]!)));
      const positions = Int32Array.from(prompts.map((p, b) => p.length + tokens[b]!.length - 1));
      logits = await runner.cachedDecodeStep(weights, ids, positions, allValid, cache, versioned);
    } else {
      const full = padBatch(
        prompts.map((p, b) => [...p, ...tokens[b]!]),
        "left",
        tokenizer.padTokenId,
      );
      logits = (await runner.decodeStep(feeds, full.ids, full.positions, full.valid, runner.emptyCache(B), B))
        .logits;
    }
  }
  return prompts.map((p, b) => {
    const ids = tokens[b]!;
    const last = ids[ids.length - 1];
    const textIds = finish[b] === "stop" && last !== undefined && stopIds.has(last) ? ids.slice(0, -1) : ids;
    let text = tokenizer.decode(textIds);
    const cut = firstStop(text, sampling.stop);
    if (cut >= 0) text = text.slice(0, cut);
    return {
      text,
      promptTokenIds: [...p],
      tokenIds: ids,
      logprobs: logprobs[b]!,
      finishReason: finish[b] ?? "length",
    };
  });
}

function sampleInto(row: Float64Array, logits: FloatArray, b: number, V: number, usable: number): void {
  for (let v = 0; v < V; v++) row[v] = v < usable ? logits[b * V + v]! : Number.NEGATIVE_INFINITY;
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
