/** Tiny model configs and weights shared by the model tests. */
import { initQwenWeights, type QwenConfig, tinyQwenConfig, type Weights } from "@troupe/engine";
import { MICRO_QWEN_SHAPE } from "@troupe/engine/testing";
import type { Graph } from "../src/graph/builder.ts";
import type { ModelRunner } from "../src/runtime/runner.ts";
import { GraphSession, type TypedArray, tensor } from "../src/runtime/session.ts";
import type { HostWeights } from "../src/runtime/weight-feeds.ts";
import { uniformStream } from "./gradcheck.ts";

const small = {
  vocab_size: 32,
  ...MICRO_QWEN_SHAPE,
  initializer_range: 0.3,
  bos_token_id: 0,
  eos_token_id: 1,
  pad_token_id: 0,
} as const;

/** qwen2 and qwen3 variants covering biases, q/k-norm, GQA, head_dim ≠ hidden/heads, tied/untied. */
export const TINY_CONFIGS: Record<string, QwenConfig> = {
  "qwen3 tied, q/k-norm, GQA": tinyQwenConfig({ ...small, model_type: "qwen3", tie_word_embeddings: true }),
  "qwen3 untied, biases, head_dim 6, MHA": tinyQwenConfig({
    ...small,
    model_type: "qwen3",
    head_dim: 6,
    num_key_value_heads: 4,
    attention_bias: true,
    tie_word_embeddings: false,
  }),
  "qwen2 untied, q/k/v biases": tinyQwenConfig({ ...small, model_type: "qwen2", tie_word_embeddings: false }),
  "qwen2 tied, one KV head": tinyQwenConfig({
    ...small,
    model_type: "qwen2",
    num_key_value_heads: 1,
    tie_word_embeddings: true,
  }),
};

/** Initialised weights with norms and biases moved off 1 and 0, so that every tensor matters. */
export function tinyWeights(config: QwenConfig, seed: number): Weights {
  const weights = initQwenWeights(config, seed);
  const rand = uniformStream(seed + 7);
  for (const [name, t] of weights) {
    if (name.endsWith("norm.weight")) for (let i = 0; i < t.data.length; i++) t.data[i] = 0.7 + 0.6 * rand();
    if (name.endsWith(".bias")) for (let i = 0; i < t.data.length; i++) t.data[i] = 0.4 * (rand() - 0.5);
  }
  return weights;
}

export function toFloat64(weights: Weights): HostWeights {
  return new Map([...weights].map(([n, t]) => [n, { shape: t.shape, data: Float64Array.from(t.data) }]));
}

export function randomTokens(n: number, vocab: number, rand: () => number): number[] {
  return Array.from({ length: n }, () => Math.floor(rand() * vocab));
}

/**
 * Two prompts (6 and 3 tokens), a 4-token completion for each, drawn from `rand` in that order, and
 * the log-probs the runner's scoring graph gives the completions: what the decode paths and the
 * reference are held to.
 */
export async function scoredCompletions(runner: ModelRunner, weights: HostWeights, rand: () => number) {
  const V = runner.config.vocab_size;
  const prompts = [randomTokens(6, V, rand), randomTokens(3, V, rand)];
  const completions = [randomTokens(4, V, rand), randomTokens(4, V, rand)];
  const scored = await runner.sequences.score(
    weights,
    prompts.map((p, b) => ({ promptTokenIds: p, completionTokenIds: completions[b]! })),
  );
  return { prompts, completions, scored };
}

/** Runs a graph once on float64 (or other) host arrays and returns every output's data. */
export async function runGraph(
  graph: Graph,
  feeds: Readonly<Record<string, { readonly data: TypedArray; readonly dims: readonly number[] }>>,
): Promise<Record<string, TypedArray>> {
  const session = await GraphSession.create(graph);
  const inputs = Object.fromEntries(
    graph.inputs.map((v) => [v.name, tensor(v.dtype, feeds[v.name]!.data, feeds[v.name]!.dims)]),
  );
  const out = await session.run(inputs);
  await session.release();
  return Object.fromEntries(Object.entries(out).map(([name, t]) => [name, t.data as TypedArray]));
}
