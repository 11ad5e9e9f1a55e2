/**
 * One model's memory plan: the estimated peak bytes of each kind of run it makes, beyond the
 * weights (activations, host inputs, ORT's overhead), from the liveness estimate of memory.ts over
 * the graph itself. The engine cuts micro-batches and generation row groups by these numbers, and
 * the bounded arenas (arena.ts) reserve them before a run.
 *
 * The plan always reads the full graphs (not the completion window's, which need less), so
 * micro-batches split the same way with the window on or off.
 */
import type { QwenConfig } from "@troupe/engine";
import type { FloatDType, Graph } from "../graph/builder.ts";
import { buildCachedDecodeGraph, buildScoringGraph, buildTrainGraph } from "../model/graphs.ts";
import { estimateGraphPeakBytes, ORT_OVERHEAD } from "./memory.ts";

/** The graphs whose runs the plan estimates. */
export type PlannedRun = "train" | "score" | "prefill";

/** A sequence as the plan sizes it: prompt + completion tokens. */
export interface SequenceTokens {
  readonly promptTokenIds: readonly number[];
  readonly completionTokenIds: readonly number[];
}

/** Estimates cached by shape: a run's plan asks the same few shapes many times. */
const MAX_CACHED_ESTIMATES = 4096;

export class MemoryPlan {
  /** Built graphs (no sessions) whose liveness the estimates read, by kind. */
  private readonly graphs = new Map<PlannedRun, Graph>();
  private readonly estimates = new Map<string, number>();

  constructor(
    readonly config: QwenConfig,
    readonly dtype: FloatDType,
    /** Ids the policy can produce (the scoring and training graphs' softmax width). */
    readonly vocab: number,
  ) {}

  /**
   * Estimated peak bytes of one run that trains on, or scores, `rows` sequences padded to
   * `tokens` tokens (prompt + completion).
   */
  runBytes(kind: "train" | "score", rows: number, tokens: number): number {
    // The graphs see every token but the last (it is only a target).
    return this.estimate(kind, { B: rows, T: Math.max(1, tokens - 1) });
  }

  /** `runBytes` of a run over these sequences (padded to the longest). */
  sequencesBytes(kind: "train" | "score", sequences: readonly SequenceTokens[]): number {
    let longest = 0;
    for (const s of sequences)
      longest = Math.max(longest, s.promptTokenIds.length + s.completionTokenIds.length);
    return this.runBytes(kind, sequences.length, longest);
  }

  /**
   * Estimated peak bytes of generating for `rows` prompts, the longest of `promptTokens` tokens,
   * up to `maxTokens` new ones: the prefill run over the left-padded prompts, plus the KV cache
   * and logits the generation holds (the single-token steps after it are far smaller).
   */
  generateBytes(rows: number, promptTokens: number, maxTokens: number): number {
    const C = promptTokens + maxTokens;
    const { num_hidden_layers: L, num_key_value_heads: KV, head_dim: D, vocab_size: V } = this.config;
    const valueBytes = this.dtype === "float32" ? 4 : 8;
    const cache = rows * (2 * L * KV * C * D + V) * valueBytes + rows * C;
    return this.estimate("prefill", { B: rows, T: promptTokens, C }) + cache;
  }

  /**
   * Estimated peak bytes of one run on one sequence of `tokens` tokens (prompt + completion) —
   * training, scoring, and generating its last `maxTokens` of them — beyond the weights.
   */
  sequenceBytes(tokens: number, maxTokens: number): Record<"train" | "score" | "generate", number> {
    return {
      train: this.runBytes("train", 1, tokens),
      score: this.runBytes("score", 1, tokens),
      generate: this.generateBytes(1, Math.max(1, tokens - maxTokens), maxTokens),
    };
  }

  /** Estimated peak bytes of one run of `kind` at these dims (B, T, and C for a prefill). */
  estimate(kind: PlannedRun, dims: Readonly<Record<string, number>>): number {
    const key = `${kind}:${Object.values(dims).join(",")}`;
    let bytes = this.estimates.get(key);
    if (bytes === undefined) {
      bytes = Math.ceil(ORT_OVERHEAD * estimateGraphPeakBytes(this.graph(kind), dims));
      if (this.estimates.size > MAX_CACHED_ESTIMATES) this.estimates.clear();
      this.estimates.set(key, bytes);
    }
    return bytes;
  }

  private graph(kind: PlannedRun): Graph {
    let graph = this.graphs.get(kind);
    if (graph === undefined) {
      const vocab = { vocab: this.vocab };
      graph =
        kind === "train"
          ? buildTrainGraph(this.config, this.dtype, vocab)
          : kind === "score"
            ? buildScoringGraph(this.config, this.dtype, vocab)
            : buildCachedDecodeGraph(this.config, this.dtype);
      this.graphs.set(kind, graph);
    }
    return graph;
  }
}
