/**
 * The same weights in the embedded engine (@troupe/engine-onnx: ONNX graphs with their own
 * reverse-mode autodiff) and in the torch worker (autograd) give the same log-probs and the same
 * AdamW step. A third, independent oracle checks both: the float64 reference forward of
 * @troupe/engine (qwenReferenceLogits, restricted to the tokenizer's ids) and the reference loss of @troupe/engine (policyLoss).
 */
import { userObservation } from "@troupe/core";
import {
  ByteTokenizer,
  decodeCheckpoint,
  encodeCheckpoint,
  initQwenWeights,
  logSoftmax,
  policyLoss,
  type TrainSequence,
  type TrainStepConfig,
  tinyQwenConfig,
} from "@troupe/engine";
import { qwenReferenceLogits } from "@troupe/engine/reference";
import { FULL_POLICY_LOSS, SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { createOnnxEngine, type OnnxEngine } from "@troupe/engine-onnx";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTorchEngine, type TorchEngine } from "../src/engine.ts";
import { TEST_WORKER, torchAvailable } from "./torch-available.ts";

const config = tinyQwenConfig({
  vocab_size: 264,
  ...SMALL_QWEN_SHAPE,
  intermediate_size: 48,
  initializer_range: 0.08,
});
const weights = initQwenWeights(config, 11);
const tokenizer = new ByteTokenizer();
const files = encodeCheckpoint({ config, weights, tokenizer });

/** Every term of the loss on, the clip and the norm clip active, AdamW ε large enough that the
 * first step depends on the gradient's magnitude, not only its sign (m̂/(√v̂+ε) = g/(|g|+ε)). */
const stepConfig: TrainStepConfig = {
  loss: FULL_POLICY_LOSS,
  optimizer: {
    lr: 1e-2,
    beta1: 0.9,
    beta2: 0.99,
    eps: 1e-3,
    weightDecay: 0.1,
    maxGradNorm: 0.5,
    warmupSteps: 0,
    schedule: "constant",
    totalSteps: 1,
    minLrRatio: 0,
  },
  microBatchSize: 2,
};

/**
 * The float64 reference's next-token log-softmax rows over the tokenizer's ids only (both engines
 * score the distribution they sample from: the model's rows past the tokenizer are left out).
 */
function referenceRows(
  promptTokenIds: readonly number[],
  completionTokenIds: readonly number[],
  usable: number,
) {
  const ids = [...promptTokenIds, ...completionTokenIds];
  const logits = qwenReferenceLogits(config, weights, ids.slice(0, -1));
  const V = config.vocab_size;
  const P = promptTokenIds.length;
  return completionTokenIds.map((_, j) =>
    logSoftmax(logits.subarray((P - 1 + j) * V, (P - 1 + j) * V + usable)),
  );
}

describe.skipIf(!torchAvailable)("embedded engine ↔ torch worker", () => {
  let torch: TorchEngine;
  let onnx: OnnxEngine;
  let batch: TrainSequence[];
  let usable: number;

  beforeAll(async () => {
    [torch, onnx] = await Promise.all([
      createTorchEngine({
        ...TEST_WORKER,
        models: { m: { kind: "files", files } },
        policies: [{ id: "p", model: "m" }],
      }),
      createOnnxEngine({ policies: [{ id: "p", checkpoint: files }] }),
    ]);
    const seqs = [
      torch.encode("p", userObservation("2+2?"), "4"),
      torch.encode("p", userObservation("name a colour"), "teal, I think"),
      torch.encode("p", userObservation("hi"), "hello there"),
    ];
    usable = torch.tokenizerOf("p").vocabSize;
    expect(usable).toBeLessThan(config.vocab_size); // the case that matters: rows past the tokenizer
    const ref = seqs.map((s) =>
      referenceRows(s.promptTokenIds, s.completionTokenIds, usable).map(
        (row, j) => row[s.completionTokenIds[j]!]!,
      ),
    );
    // old log-probs off the current policy by ±0.3 so that both clip branches and the dual clip occur
    batch = seqs.map((s, b) => ({
      ...s,
      oldLogprobs: ref[b]!.map((x, t) => x + (t % 3 === 0 ? 0.3 : t % 3 === 1 ? -0.3 : 0.05)),
      refLogprobs: ref[b]!.map((x, t) => x - 0.1 * ((t % 2) * 2 - 1)),
      advantage: [1.5, -0.7, -2][b]!,
    }));
  }, 60_000);

  afterAll(async () => {
    await torch?.close();
    await onnx?.close();
  });

  it("gives the same log-probs as the embedded engine and the float64 reference (1e-4)", async () => {
    const seqs = batch.map(({ promptTokenIds, completionTokenIds }) => ({
      promptTokenIds,
      completionTokenIds,
    }));
    const [fromTorch, fromOnnx] = await Promise.all([torch.logprobs("p", seqs), onnx.logprobs("p", seqs)]);
    seqs.forEach((s, b) => {
      const ref = referenceRows(s.promptTokenIds, s.completionTokenIds, usable).map(
        (row, j) => row[s.completionTokenIds[j]!]!,
      );
      expect(fromTorch[b]).toHaveLength(ref.length);
      ref.forEach((x, t) => {
        expect(Math.abs(fromTorch[b]![t]! - x)).toBeLessThan(1e-4);
        expect(Math.abs(fromTorch[b]![t]! - fromOnnx[b]![t]!)).toBeLessThan(1e-4);
      });
    });
  });

  it("takes the same AdamW step: same metrics, same updated weights", async () => {
    const [mt, mo] = await Promise.all([
      torch.trainStep("p", batch, stepConfig),
      onnx.trainStep("p", batch, stepConfig),
    ]);
    // The loss, from the float64 reference forward and the reference loss of @troupe/engine.
    const expected = policyLoss(
      batch.map((s) => {
        const rows = referenceRows(s.promptTokenIds, s.completionTokenIds, usable);
        return {
          logprobs: rows.map((row, j) => row[s.completionTokenIds[j]!]!),
          oldLogprobs: s.oldLogprobs,
          refLogprobs: s.refLogprobs,
          entropies: rows.map((row) => -row.reduce((h, lp) => h + Math.exp(lp) * lp, 0)),
          advantage: s.advantage,
          mask: s.completionTokenIds.map(() => 1),
        };
      }),
      stepConfig.loss,
    );
    for (const m of [mt, mo]) {
      expect(m.loss).toBeCloseTo(expected.loss, 4);
      expect(m.pgLoss).toBeCloseTo(expected.pgLoss, 4);
      expect(m.kl).toBeCloseTo(expected.kl, 4);
      expect(m.entropy).toBeCloseTo(expected.entropy, 4);
      expect(m.clipFraction).toBeCloseTo(expected.clipFraction, 6);
      expect(m.tokens).toBe(expected.tokens);
      expect(m.optimizerStep).toBe(1);
    }
    expect(expected.clipFraction).toBeGreaterThan(0);
    expect(mt.gradNorm).toBeGreaterThan(stepConfig.optimizer.maxGradNorm); // the clip is active
    expect(Math.abs(mt.gradNorm - mo.gradNorm) / mo.gradNorm).toBeLessThan(1e-4);

    const torchWeights = decodeCheckpoint(await torch.save("p")).weights;
    const onnxWeights = onnx.weightsOf("p");
    let worst = 0;
    let moved = 0;
    for (const [name, t] of onnxWeights) {
      const u = torchWeights.get(name)!.data;
      const before = weights.get(name)!.data;
      for (let i = 0; i < t.data.length; i++) {
        worst = Math.max(worst, Math.abs(u[i]! - t.data[i]!));
        moved = Math.max(moved, Math.abs(u[i]! - before[i]!));
      }
    }
    expect(moved).toBeGreaterThan(1e-3); // the step did something
    expect(worst).toBeLessThan(2e-5);
  });
});
