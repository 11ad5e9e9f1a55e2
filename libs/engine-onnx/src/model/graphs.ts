/**
 * The three graphs an engine runs per policy, all with the weights as graph inputs (an update
 * needs no session rebuild) and dynamic batch/time axes:
 *
 *   scoring  ids, targets → per-token log p(target) and entropy (right-padded sequences)
 *   decode   ids, KV cache → last-position logits and the extended cache (prefill is P = 0)
 *   train    scoring + the PPO-clip loss of libs/rl + ∂loss/∂w for every weight
 */
import type { QwenConfig } from "@troupe/engine";
import { gradients } from "../graph/autodiff.ts";
import { type FloatDType, Graph, type Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { DIM, decoderForward, lmHead, weightInputs } from "./decoder.ts";
import { graphWeightSpecs } from "./fused-weights.ts";
import { ppoLoss } from "./ppo-loss.ts";

export interface ModelGraphInputs {
  readonly graph: Graph;
  readonly weights: Map<string, Value>;
  readonly inputIds: Value;
  readonly cos: Value;
  readonly sin: Value;
  readonly attnBias: Value;
}

function modelInputs(
  config: QwenConfig,
  dtype: FloatDType,
  name: string,
  withPast: boolean,
): ModelGraphInputs {
  const graph = new Graph(name);
  // Decode graphs (withPast) take the fused q/k/v and gate/up weights.
  const weights = weightInputs(graph, graphWeightSpecs(config, withPast), dtype);
  const { batch: B, time: T } = DIM;
  const S = withPast ? DIM.total : T;
  return {
    graph,
    weights,
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

/** Scoring graph: outputs `logprobs` and `entropy` [B, T] (and `logits` [N, V] when asked). */
export function buildScoringGraph(config: QwenConfig, dtype: FloatDType, withLogits = false): Graph {
  const m = modelInputs(config, dtype, "scoring", false);
  const targets = m.graph.input("targets", "int64", [DIM.batch, DIM.time]);
  const { hidden } = decoderForward(config, m.weights, m);
  const logits = lmHead(config, m.weights, hidden);
  const { logprobs, entropy } = tokenLogprobs(logits, targets, config.vocab_size);
  m.graph.output(logprobs, "logprobs");
  m.graph.output(entropy, "entropy");
  if (withLogits) m.graph.output(logits, "logits");
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
  const m = modelInputs(config, dtype, "decode", true);
  const { graph } = m;
  const kvShape = [DIM.batch, config.num_key_value_heads, DIM.past, config.head_dim];
  const past = Array.from({ length: config.num_hidden_layers }, (_, i) => ({
    k: graph.input(pastKeyName(i), dtype, kvShape),
    v: graph.input(pastValueName(i), dtype, kvShape),
  }));
  const { hidden, present } = decoderForward(config, m.weights, { ...m, past });
  const d = config.hidden_size;
  // Last column of every row: hidden [B·T, d] → [B, T, d] → [B, 1, d] → [B, d].
  const last = graph.untaped(() => {
    const batchDim = op.slice(op.shapeOf(m.inputIds), 0, 0, 1, [1]);
    const byBatch = op.reshape(hidden, op.concat([batchDim, graph.ints([-1, d])], 0), [
      DIM.batch,
      DIM.time,
      d,
    ]);
    const lastColumn = op.slice(byBatch, 1, -1, Number.MAX_SAFE_INTEGER, [DIM.batch, 1, d]);
    return op.reshape(lastColumn, graph.ints([-1, d]), [DIM.batch, d]);
  });
  graph.output(lmHead(config, m.weights, last), "logits");
  present.forEach((p, i) => {
    graph.output(p.k, presentKeyName(i));
    graph.output(p.v, presentValueName(i));
  });
  return graph;
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
} as const;

export const gradName = (weight: string) => `grad.${weight}`;

/**
 * Training graph: forward, the PPO-clip loss, and the gradient of the loss for every weight.
 * Outputs: loss, pg_loss, kl, entropy_sum (aggregated like the loss), clipped (count of clipped
 * tokens), old_minus_new (Σ over masked tokens of ℓ_old − ℓ), logprobs, entropy, grad.<weight>.
 */
export function buildTrainGraph(config: QwenConfig, dtype: FloatDType): Graph {
  const m = modelInputs(config, dtype, "train", false);
  const { graph } = m;
  const bt = [DIM.batch, DIM.time];
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
  };
  const { hidden } = decoderForward(config, m.weights, m);
  const logits = lmHead(config, m.weights, hidden);
  const { logprobs, entropy } = tokenLogprobs(logits, targets, config.vocab_size);
  const loss = ppoLoss({ ...lossInputs, logprobs, entropy });
  graph.output(loss.loss, "loss");
  graph.output(loss.pgLoss, "pg_loss");
  graph.output(loss.kl, "kl");
  graph.output(loss.entropy, "entropy_sum");
  graph.output(loss.clipped, "clipped");
  graph.output(loss.oldMinusNew, "old_minus_new");
  graph.output(logprobs, "logprobs");
  graph.output(entropy, "entropy");
  const names = [...m.weights.keys()];
  const grads = gradients(
    loss.loss,
    names.map((n) => m.weights.get(n)!),
  );
  grads.forEach((g, i) => graph.output(g, gradName(names[i]!)));
  return graph;
}
