/**
 * Micro-batches under a token or memory budget: a split run gives the unsplit result (loss,
 * gradients, log-probs, completions), the memory estimate behaves as the planner assumes, and a
 * sequence that cannot fit is refused before anything runs.
 */
import { samplingParams, userObservation } from "@troupe/core";
import {
  defaultOptimizerConfig,
  defaultPolicyLossConfig,
  initQwenWeights,
  type TrainSequence,
  type TrainStepConfig,
  tinyQwenConfig,
} from "@troupe/engine";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createOnnxEngine, MemoryBudgetError, type OnnxEngine } from "../../src/engine.ts";
import { Graph } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { packWeights } from "../../src/model/fused-weights.ts";
import { buildTrainGraph } from "../../src/model/graphs.ts";
import { dimValue, estimateGraphPeakBytes } from "../../src/runtime/memory.ts";
import { ModelRunner } from "../../src/runtime/runner.ts";
import type { LossSequenceInput } from "../../src/runtime/sequence-runner.ts";

const config = tinyQwenConfig(SMALL_QWEN_SHAPE);
const engines: OnnxEngine[] = [];
async function engine(activationBudgetBytes?: number): Promise<OnnxEngine> {
  const e = await createOnnxEngine({
    policies: [{ id: "p", config, seed: 3 }],
    ...(activationBudgetBytes === undefined ? {} : { activationBudgetBytes }),
  });
  engines.push(e);
  return e;
}
afterAll(async () => {
  for (const e of engines) await e.close();
});

/** Completions of very different lengths after prompts of very different lengths. */
const TEXTS: readonly [string, string][] = [
  ["a", "x"],
  ["a long prompt about a maze with walls on every side and a goal far away", "up up left"],
  ["mid-sized prompt", "the answer is a longer text than the others, much longer"],
  ["b", "yes"],
  ["another prompt of some length here", "no"],
];

async function batch(e: OnnxEngine): Promise<TrainSequence[]> {
  const seqs = TEXTS.map(([p, c]) => e.encode("p", userObservation(p), c));
  const old = await e.logprobs("p", seqs);
  return seqs.map((s, i) => ({ ...s, oldLogprobs: old[i]!, advantage: [1, -0.5, 2, -1, 0.25][i]! }));
}

const step = (overrides: Partial<TrainStepConfig>): TrainStepConfig => ({
  loss: { ...defaultPolicyLossConfig, aggregation: "token-mean" },
  optimizer: { ...defaultOptimizerConfig, lr: 1e-3, maxGradNorm: 0 },
  microBatchSize: 16,
  ...overrides,
});

describe("micro-batches under a budget", () => {
  it("the runner's gradients summed over a token-budget split equal the unsplit ones", async () => {
    const runner = new ModelRunner(config, "float32", "test");
    const weights = packWeights(config, initQwenWeights(config, 5));
    const e = await engine();
    const seqs = await batch(e);
    const total = seqs.reduce((n, s) => n + s.completionTokenIds.length, 0);
    const inputs: LossSequenceInput[] = seqs.map((s) => ({
      ...s,
      advantages: s.completionTokenIds.map(() => s.advantage),
      mask: s.completionTokenIds.map(() => 1),
      tokenWeights: s.completionTokenIds.map(() => 1 / total), // token-mean over the whole batch
    }));
    const loss = { ...defaultPolicyLossConfig, klCoef: 0, entropyCoef: 0.01 };
    const whole = await runner.sequences.trainMicroBatch(weights, inputs, loss);
    const parts = [inputs.slice(0, 1), inputs.slice(1, 2), inputs.slice(2, 5)];
    const split = await Promise.all(parts.map((p) => runner.sequences.trainMicroBatch(weights, p, loss)));
    expect(split.reduce((a, r) => a + r.loss, 0)).toBeCloseTo(whole.loss, 6);
    for (const [name, g] of whole.grads) {
      const summed = new Float64Array(g.length);
      for (const r of split) r.grads.get(name)!.forEach((x, i) => (summed[i]! += x));
      const scale = Math.max(1e-6, ...Array.from(g, Math.abs));
      for (let i = 0; i < g.length; i++) expect(Math.abs(summed[i]! - g[i]!) / scale).toBeLessThan(1e-4);
    }
    await runner.release();
  });

  it("trainStep split by maxTokensPerMicroBatch or by a memory budget gives the unsplit update", async () => {
    const unsplit = await engine();
    const metrics = await unsplit.trainStep("p", await batch(unsplit), step({}));
    const longest = Math.max(
      ...(await batch(unsplit)).map((s) => s.promptTokenIds.length + s.completionTokenIds.length),
    );
    const byTokens = await engine();
    const tokenMetrics = await byTokens.trainStep(
      "p",
      await batch(byTokens),
      step({ maxTokensPerMicroBatch: longest }),
    );
    // A memory budget that holds exactly one of the longest sequences per micro-batch.
    const probe = await engine();
    const oneLongest = probe.sequenceBytes("p", longest, 1).train;
    const byMemory = await engine(Math.max(oneLongest, probe.sequenceBytes("p", longest, 1).score));
    const memoryMetrics = await byMemory.trainStep("p", await batch(byMemory), step({}));
    for (const m of [tokenMetrics, memoryMetrics]) {
      expect(m.loss).toBeCloseTo(metrics.loss, 6);
      expect(m.entropy).toBeCloseTo(metrics.entropy, 5);
      expect(m.gradNorm / metrics.gradNorm).toBeCloseTo(1, 5);
    }
    const w = unsplit.weightsOf("p");
    for (const other of [byTokens, byMemory]) {
      for (const [name, t] of other.weightsOf("p")) {
        const ref = w.get(name)!.data;
        // AdamW's first step is ≈ lr·sign(g): float-rounding differences of tiny gradients show at
        // the 1e-6 level (lr 1e-3); a wrong split moves weights by a whole step.
        for (let i = 0; i < ref.length; i++) expect(Math.abs(t.data[i]! - ref[i]!)).toBeLessThan(2e-5);
      }
    }
  });

  it("log-probs and completions do not depend on how the budget cuts the batch", async () => {
    const unsplit = await engine();
    const seqs = await batch(unsplit);
    // Room for one of the longest sequences per run: every longer batch is cut.
    const longestPrompt = Math.max(...seqs.map((s) => s.promptTokenIds.length));
    const longest = Math.max(...seqs.map((s) => s.promptTokenIds.length + s.completionTokenIds.length));
    const one = Math.max(
      unsplit.sequenceBytes("p", longestPrompt + 8, 8).generate,
      unsplit.sequenceBytes("p", longest, 1).score,
    );
    const small = await engine(one);
    const [a, b] = [await unsplit.logprobs("p", seqs), await small.logprobs("p", seqs)];
    a.forEach((row, i) => row.forEach((x, j) => expect(b[i]![j]!).toBeCloseTo(x, 5)));
    const requests = TEXTS.map(([p], i) => ({
      policyId: "p",
      observation: userObservation(p),
      seed: 10 + i,
    }));
    for (const temperature of [0, 1]) {
      const sampling = samplingParams({ temperature, maxTokens: 8 });
      const [x, y] = [await unsplit.generate(requests, sampling), await small.generate(requests, sampling)];
      expect(y.map((c) => c.tokenIds)).toEqual(x.map((c) => c.tokenIds));
    }
  });

  it("refuses a sequence that cannot fit alone, with the estimate and the budget", async () => {
    const e = await engine(64 * 1024);
    const long = e.encode("p", userObservation("z".repeat(300)), "answer");
    const seq = { ...long, oldLogprobs: long.completionTokenIds.map(() => -1), advantage: 1 };
    const needed = e.sequenceBytes("p", long.promptTokenIds.length + long.completionTokenIds.length, 1).score;
    await expect(e.logprobs("p", [long])).rejects.toThrow(MemoryBudgetError);
    await expect(e.logprobs("p", [long])).rejects.toThrow(
      new RegExp(
        `policy "p": scoring one sequence of ${long.promptTokenIds.length + long.completionTokenIds.length} tokens needs an estimated .*, more than the 64.0 KiB the memory budget leaves for one run \\(raise memoryBudget\\)`,
      ),
    );
    await expect(e.trainStep("p", [seq], step({}))).rejects.toThrow(/training on one sequence/);
    expect(needed).toBeGreaterThan(64 * 1024);
  });
});

describe("estimateGraphPeakBytes", () => {
  it("evaluates symbolic dims", () => {
    expect(dimValue("2*T", { T: 5 })).toBe(10);
    expect(dimValue("C+1", { C: 7 })).toBe(8);
    expect(dimValue(3, {})).toBe(3);
    expect(() => dimValue("Q", {})).toThrow(/unbound "Q"/);
  });

  it("counts live tensors on a hand-checked chain", () => {
    // x [B, T] float32 (input, live throughout) → a = x·x → b = a + x → c = exp(b) (output).
    // Live after each node: x + a; x + a + b, then a freed; x + b + c, then b freed.
    const g = new Graph("chain");
    const x = g.input("x", "float32", ["B", "T"]);
    const a = op.mul(x, x);
    const b = op.add(a, x);
    g.output(op.exp(b), "c");
    const unit = 2 * 3 * 4;
    expect(estimateGraphPeakBytes(g, { B: 2, T: 3 })).toBe(3 * unit);
  });

  it("grows linearly in the batch and faster than linearly in length for the training graph", () => {
    const g = buildTrainGraph(config, "float32");
    const one = estimateGraphPeakBytes(g, { B: 1, T: 64 });
    expect(estimateGraphPeakBytes(g, { B: 3, T: 64 })).toBe(3 * one);
    expect(estimateGraphPeakBytes(g, { B: 1, T: 256 })).toBeGreaterThan(4 * one);
  });
});
