/**
 * Batched sampling with a KV cache. Prompts are left-padded so every row's next token sits in the
 * last column; one prefill run fills the cache, then each step feeds one token per row and the
 * cache tensors of the previous step, which ORT wrote into pre-allocated buffers (two per cache
 * tensor, used in turn; nothing is allocated or copied through JS per step). Every row samples with its own
 * `Rng(deriveSeed(seed))`, drawing exactly one number per token, so a completion does not depend on what else
 * is in the batch.
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
  const feeds: Record<string, ort.Tensor> = runner.weightFeeds(weights, "decode");
  const kvCache = options.kvCache ?? true;

  const padded = padBatch(prompts, "left", tokenizer.padTokenId);
  let keyValid = padded.valid;
  const capacity = kvCache ? padded.time + sampling.maxTokens : undefined;
  let step = await runner.decodeStep(
    feeds,
    padded.ids,
    padded.positions,
    keyValid,
    runner.emptyCache(B, capacity),
    B,
  );
  const row = new Float64Array(V);
  for (let n = 0; n < sampling.maxTokens; n++) {
    for (let b = 0; b < B; b++) {
      if (finish[b] !== undefined) continue;
      sampleInto(row, step.logits, b, V, usable);
      const { tokenId, logprob } = sampleToken(row, sampling, rngs[b]!);
      tokens[b]!.push(tokenId);
      logprobs[b]!.push(logprob);
      if (stopIds.has(tokenId)) finish[b] = "stop";
      else if (sampling.stop.length > 0 && firstStop(tokenizer.decode(tokens[b]!), sampling.stop) >= 0)
        finish[b] = "stop";
      else if (tokens[b]!.length >= sampling.maxTokens) finish[b] = "length";
    }
    if (finish.every((f) => f !== undefined)) break;
    if (kvCache) {
      // One new column: each row's last token (a finished row repeats its last one; it is ignored).
      const ids = BigInt64Array.from(tokens.map((t) => BigInt(t[t.length - 1]!)));
      const positions = Int32Array.from(prompts.map((p, b) => p.length + tokens[b]!.length - 1));
      const S = step.cache.length + 1;
      const next = new Uint8Array(B * S);
      for (let b = 0; b < B; b++) {
        next.set(keyValid.subarray(b * (S - 1), (b + 1) * (S - 1)), b * S);
        next[b * S + S - 1] = 1;
      }
      keyValid = next;
      step = await runner.decodeStep(feeds, ids, positions, keyValid, step.cache, B);
    } else {
      const full = padBatch(
        prompts.map((p, b) => [...p, ...tokens[b]!]),
        "left",
        tokenizer.padTokenId,
      );
      step = await runner.decodeStep(feeds, full.ids, full.positions, full.valid, runner.emptyCache(B), B);
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
