/**
 * The graphs an engine runs per policy, with dynamic batch/time axes and the weights as graph
 * inputs (an update needs no session rebuild), except a decode step built with constant weights:
 *
 *   scoring        ids, targets → per-token log p(target) and entropy (right-padded sequences)
 *   decode         ids, growing KV cache → last-position logits and the extended cache (Concat)
 *   cached decode  ids, pre-allocated KV cache → last-position logits and the new tokens' keys/values
 *                  (prefill with any T; the single-token step with T = 1, optionally baked weights)
 *   train          scoring + the PPO-clip loss of libs/engine/src/loss.ts + ∂loss/∂w for every weight
 */
import type { QwenConfig } from "@troupe/engine";
import { gradients } from "../graph/autodiff.ts";
import { type FloatDType, Graph, type Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { growingCacheForward, prefillForward, stepForward } from "./decode.ts";
import { DIM, decoderForward, lmHead } from "./decoder.ts";
import { graphWeightSpecs } from "./fused-weights.ts";
import { ppoLoss } from "./ppo-loss.ts";
import {
  type ModelWeights,
  modelWeights,
  type WeightData,
  weightConstants,
  weightInputs,
} from "./weights.ts";

export type { WeightData } from "./weights.ts";

export interface ModelGraphInputs {
  readonly graph: Graph;
  /** The weight values by graph input name (what training differentiates against). */
  readonly weightValues: ReadonlyMap<string, Value>;
  /** The same, resolved for the decoder's blocks. */
  readonly weights: ModelWeights;
  readonly inputIds: Value;
  readonly cos: Value;
  readonly sin: Value;
  readonly attnBias: Value;
}

/**
 * The inputs every model graph has. `keys` names the key axis of the attention bias (T without a
 * cache); decode graphs (`fused`) take the fused q/k/v and gate/up weights.
 */
function modelInputs(
  config: QwenConfig,
  dtype: FloatDType,
  name: string,
  options: {
    readonly fused: boolean;
    readonly keys: string;
    /** The new-token axis: symbolic, or 1 for the single-token decode step. */
    readonly time?: string | 1;
    readonly constantWeights?: WeightData;
  },
): ModelGraphInputs {
  const graph = new Graph(name);
  const specs = graphWeightSpecs(config, options.fused);
  const weightValues =
    options.constantWeights === undefined
      ? weightInputs(graph, specs, dtype)
      : weightConstants(graph, specs, options.constantWeights, dtype);
  const B = DIM.batch;
  const T = options.time ?? DIM.time;
  const S = options.keys;
  return {
    graph,
    weightValues,
    weights: modelWeights(config, weightValues, options.fused),
    inputIds: graph.input("input_ids", "int64", [B, T]),
    cos: graph.input("rope_cos", dtype, [B, T, 1, config.head_dim]),
    sin: graph.input("rope_sin", dtype, [B, T, 1, config.head_dim]),
    attnBias: graph.input("attn_bias", dtype, [B, 1, 1, T, S]),
  };
}

/** Per-row log p(target) and entropy from logits [N, V]; targets [B, T] int64. */
export function tokenLogprobs(
  logits: Value,
  targets: Value,
  vocab: number,
): { logprobs: Value; entropy: Value } {
  const graph = logits.graph;
  const logp = op.logSoftmax(logits, -1);
  const onehot = graph.untaped(() => {
    const flat = op.reshape(targets, graph.ints([-1, 1]), [DIM.rows, 1]);
    const vocabRow = graph.constant(
      Array.from({ length: vocab }, (_, i) => i),
      "int64",
      [1, vocab],
    );
    return op.cast(op.equal(flat, vocabRow), logits.dtype);
  });
  const shapeBT = graph.untaped(() => op.shapeOf(targets));
  const picked = op.reduceSum(op.mul(logp, onehot), [1], false);
  const entropy = op.neg(op.reduceSum(op.mul(op.exp(logp), logp), [1], false));
  return {
    logprobs: op.reshape(picked, shapeBT, [DIM.batch, DIM.time]),
    entropy: op.reshape(entropy, shapeBT, [DIM.batch, DIM.time]),
  };
}

export interface ScoringOptions {
  /**
   * Ids the policy can produce (its tokenizer's vocabulary size, default vocab_size): the softmax
   * runs over these only, as the sampler's does. Every target must be below it.
   */
  readonly vocab?: number;
  /**
   * Outputs for the trailing W columns only, W being the second axis of `targets` [B, W] (and of
   * the loss inputs): for left-padded sequences whose completions end every row, the columns that
   * predict completion tokens. The last layer's queries, MLP and the output head then run on those
   * columns only (query-window.ts): the same numbers there, less work elsewhere.
   */
  readonly window?: boolean;
}

/** The [B, T] or, windowed, [B, W] axes of targets and per-token outputs. */
function outputAxes(options: ScoringOptions): [string, string] {
  return [DIM.batch, options.window ? "W" : DIM.time];
}

/**
 * The decoder of the scoring and training graphs; windowed, its query window W is the second axis
 * of `targets` [B, W].
 */
function forwardForTargets(
  config: QwenConfig,
  m: ModelGraphInputs,
  targets: Value,
  options: ScoringOptions,
): Value {
  if (!options.window) return decoderForward(config, m.weights, m);
  const window = m.graph.untaped(() => op.slice(op.shapeOf(targets), 0, 1, 2, [1]));
  return decoderForward(config, m.weights, m, window);
}

/** Scoring graph: outputs `logprobs` and `entropy` [B, T] (and `logits` [N, vocab] when asked). */
export function buildScoringGraph(
  config: QwenConfig,
  dtype: FloatDType,
  options: ScoringOptions & { readonly withLogits?: boolean } = {},
): Graph {
  const vocab = options.vocab ?? config.vocab_size;
  const m = modelInputs(config, dtype, "scoring", { fused: false, keys: DIM.time });
  const targets = m.graph.input("targets", "int64", outputAxes(options));
  const hidden = forwardForTargets(config, m, targets, options);
  const logits = lmHead(config, m.weights, hidden, vocab);
  const { logprobs, entropy } = tokenLogprobs(logits, targets, vocab);
  m.graph.output(logprobs, "logprobs");
  m.graph.output(entropy, "entropy");
  if (options.withLogits) m.graph.output(logits, "logits");
  return m.graph;
}

export const pastKeyName = (layer: number) => `past_key.${layer}`;
export const pastValueName = (layer: number) => `past_value.${layer}`;
export const presentKeyName = (layer: number) => `present_key.${layer}`;
export const presentValueName = (layer: number) => `present_value.${layer}`;

/**
 * Decode graph: new tokens [B, T] after P cached ones. Outputs `logits` [B, V] of the last column
 * and the cache `present_key.i`/`present_value.i` [B, KV, P + T, d_head], to be fed back as the
 * next step's `past_*` (ORT tensors, no copy through JS arrays).
 */
export function buildDecodeGraph(config: QwenConfig, dtype: FloatDType): Graph {
  const m = modelInputs(config, dtype, "decode", { fused: true, keys: DIM.total });
  const { graph } = m;
  const kvShape = [DIM.batch, config.num_key_value_heads, DIM.past, config.head_dim];
  const past = Array.from({ length: config.num_hidden_layers }, (_, i) => ({
    k: graph.input(pastKeyName(i), dtype, kvShape),
    v: graph.input(pastValueName(i), dtype, kvShape),
  }));
  const { hidden, present } = growingCacheForward(config, m.weights, m, past);
  graph.output(lmHead(config, m.weights, lastColumn(m.inputIds, hidden, config.hidden_size)), "logits");
  present.forEach((p, i) => {
    graph.output(p.k, presentKeyName(i));
    graph.output(p.v, presentValueName(i));
  });
  return graph;
}

export const cacheKeyName = (layer: number) => `cache_key.${layer}`;
export const cacheValueName = (layer: number) => `cache_value.${layer}`;
export const newKeyName = (layer: number) => `new_key.${layer}`;
export const newValueName = (layer: number) => `new_value.${layer}`;

/**
 * Cached decode graph: new tokens [B, T] after the first P columns of a pre-allocated cache
 * `cache_key.i`/`cache_value.i` [B, KV, C, d_head] (C ≥ P, any columns past P masked by
 * `attn_bias` [B, 1, 1, T, C + T], whose last T columns are the new tokens). Outputs `logits`
 * [B, V] of the last column and only the new tokens' `new_key.i`/`new_value.i` [B, KV, T, d_head],
 * which the caller writes into the cache at column P. Nothing copies the cache per step (the
 * Concat of `buildDecodeGraph` copies all of it). With `constantWeights` the weights are
 * initializers (pre-packed by ORT) instead of inputs.
 */
export function buildCachedDecodeGraph(
  config: QwenConfig,
  dtype: FloatDType,
  options: {
    /** Bake these weights in as initializers instead of declaring them as inputs. */
    readonly constantWeights?: WeightData | undefined;
    /** Exactly one new token per row (T = 1): the decode step, with constant-shaped reshapes. */
    readonly singleToken?: boolean;
    /**
     * A prefill whose last layer runs its queries, MLP and the final norm on the last column only
     * (a query window of 1, query-window.ts): the only column whose logits are read. Every column's
     * keys and values still go to the cache.
     */
    readonly lastColumnOnly?: boolean;
  } = {},
): Graph {
  const C = "C";
  const time = options.singleToken ? 1 : DIM.time;
  const m = modelInputs(config, dtype, options.singleToken ? "decode_step" : "cached_decode", {
    fused: true,
    keys: `${C}+${time}`,
    time,
    ...(options.constantWeights === undefined ? {} : { constantWeights: options.constantWeights }),
  });
  const { graph } = m;
  const kvShape = [DIM.batch, config.num_key_value_heads, C, config.head_dim];
  const cache = Array.from({ length: config.num_hidden_layers }, (_, i) => ({
    k: graph.input(cacheKeyName(i), dtype, kvShape),
    v: graph.input(cacheValueName(i), dtype, kvShape),
  }));
  const windowed = options.lastColumnOnly === true && !options.singleToken;
  const { hidden, present } = options.singleToken
    ? stepForward(config, m.weights, m, cache)
    : prefillForward(config, m.weights, m, cache, { lastColumnOnly: windowed });
  // With one token per row, or a window of one, the hidden rows are already the last column.
  const last = options.singleToken || windowed ? hidden : lastColumn(m.inputIds, hidden, config.hidden_size);
  graph.output(lmHead(config, m.weights, last), "logits");
  present.forEach((p, i) => {
    graph.output(p.k, newKeyName(i));
    graph.output(p.v, newValueName(i));
  });
  return graph;
}

/** Last column of every row: hidden [B·T, d] → [B, T, d] → [B, 1, d] → [B, d]. */
function lastColumn(ids: Value, hidden: Value, d: number): Value {
  const graph = ids.graph;
  return graph.untaped(() => {
    const batchDim = op.slice(op.shapeOf(ids), 0, 0, 1, [1]);
    const byBatch = op.reshape(hidden, op.concat([batchDim, graph.ints([-1, d])], 0), [
      DIM.batch,
      DIM.time,
      d,
    ]);
    const last = op.slice(byBatch, 1, -1, Number.MAX_SAFE_INTEGER, [DIM.batch, 1, d]);
    return op.reshape(last, graph.ints([-1, d]), [DIM.batch, d]);
  });
}

/** The loss inputs of the training graph, all [B, T] except the scalar coefficients. */
export const TRAIN_INPUTS = {
  oldLogprobs: "old_logprobs",
  advantages: "advantages",
  refLogprobs: "ref_logprobs",
  /** Aggregation weight of each token (loss = Σ w · L); 0 outside the completion. */
  tokenWeights: "token_weights",
  mask: "loss_mask",
  clipLow: "clip_low",
  clipHigh: "clip_high",
  /** Dual-clip constant c and a 0/1 switch (c is ignored when off). */
  dualClip: "dual_clip",
  dualClipOn: "dual_clip_on",
  klCoef: "kl_coef",
  entropyCoef: "entropy_coef",
  nllCoef: "nll_coef",
} as const;

export const gradName = (weight: string) => `grad.${weight}`;

/**
 * Training graph: forward, the PPO-clip loss, and the gradient of the loss for every weight.
 * Outputs: loss, pg_loss, kl, entropy_sum (aggregated like the loss), clipped (count of clipped
 * tokens), old_minus_new (Σ over masked tokens of ℓ_old − ℓ), logprobs, entropy, grad.<weight>.
 */
export function buildTrainGraph(config: QwenConfig, dtype: FloatDType, options: ScoringOptions = {}): Graph {
  const vocab = options.vocab ?? config.vocab_size;
  const m = modelInputs(config, dtype, "train", { fused: false, keys: DIM.time });
  const { graph } = m;
  const bt = outputAxes(options);
  const targets = graph.input("targets", "int64", bt);
  const input = (name: string) => graph.input(name, dtype, bt);
  const scalar = (name: string) => graph.input(name, dtype, []);
  const lossInputs = {
    oldLogprobs: input(TRAIN_INPUTS.oldLogprobs),
    advantages: input(TRAIN_INPUTS.advantages),
    refLogprobs: input(TRAIN_INPUTS.refLogprobs),
    tokenWeights: input(TRAIN_INPUTS.tokenWeights),
    mask: input(TRAIN_INPUTS.mask),
    clipLow: scalar(TRAIN_INPUTS.clipLow),
    clipHigh: scalar(TRAIN_INPUTS.clipHigh),
    dualClip: scalar(TRAIN_INPUTS.dualClip),
    dualClipOn: scalar(TRAIN_INPUTS.dualClipOn),
    klCoef: scalar(TRAIN_INPUTS.klCoef),
    entropyCoef: scalar(TRAIN_INPUTS.entropyCoef),
    nllCoef: scalar(TRAIN_INPUTS.nllCoef),
  };
  const hidden = forwardForTargets(config, m, targets, options);
  const logits = lmHead(config, m.weights, hidden, vocab);
  const { logprobs, entropy } = tokenLogprobs(logits, targets, vocab);
  const loss = ppoLoss({ ...lossInputs, logprobs, entropy });
  graph.output(loss.loss, "loss");
  graph.output(loss.pgLoss, "pg_loss");
  graph.output(loss.kl, "kl");
  graph.output(loss.entropy, "entropy_sum");
  graph.output(loss.clipped, "clipped");
  graph.output(loss.oldMinusNew, "old_minus_new");
  graph.output(logprobs, "logprobs");
  graph.output(entropy, "entropy");
  const names = [...m.weightValues.keys()];
  const grads = gradients(
    loss.loss,
    names.map((n) => m.weightValues.get(n)!),
  );
  grads.forEach((g, i) => graph.output(g, gradName(names[i]!)));
  return graph;
}
