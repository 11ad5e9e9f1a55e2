import { samplingParams, userObservation } from "@troupe/core";
import {
  defaultOptimizerConfig,
  defaultPolicyLossConfig,
  policyLoss,
  type TrainSequence,
  type TrainStepConfig,
  tinyQwenConfig,
} from "@troupe/engine";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createOnnxEngine, firstNonFinite, type OnnxEngine } from "../src/engine.ts";

/** A small model over the byte tokenizer's 512-id vocabulary (fast enough for many steps in a test). */
const config = tinyQwenConfig(SMALL_QWEN_SHAPE);

const trainConfig = (overrides: Partial<TrainStepConfig> = {}): TrainStepConfig => ({
  loss: { ...defaultPolicyLossConfig, clipLow: 0.2, clipHigh: 0.28, aggregation: "token-mean" },
  optimizer: { ...defaultOptimizerConfig, lr: 1e-2, weightDecay: 0, maxGradNorm: 1 },
  microBatchSize: 2,
  ...overrides,
});

const engines: OnnxEngine[] = [];
async function engine(seed = 1): Promise<OnnxEngine> {
  const e = await createOnnxEngine({
    policies: [
      { id: "p", config, seed },
      { id: "q", config, seed: seed + 1 },
    ],
  });
  engines.push(e);
  return e;
}
afterAll(async () => {
  for (const e of engines) await e.close();
});

async function batchFor(e: OnnxEngine, advantages: readonly number[], perturb = 0): Promise<TrainSequence[]> {
  const texts = ["hello", "ab", "the cat sat", "xyz!"];
  const seqs = texts.map((t, i) => e.encode("p", userObservation(`say ${i}`), t));
  const lps = await e.logprobs("p", seqs);
  return seqs.map((s, i) => ({
    ...s,
    oldLogprobs: lps[i]!.map((lp, j) => lp + perturb * Math.sin(7 * i + 3 * j)),
    advantage: advantages[i % advantages.length]!,
  }));
}

describe("OnnxEngine", () => {
  it("lists its policies", async () => {
    const e = await engine();
    expect(e.kind).toBe("onnx");
    expect(e.policies().map((p) => [p.id, p.vocabSize, p.optimizerStep])).toEqual([
      ["p", 512, 0],
      ["q", 512, 0],
    ]);
  });

  it("same seed → same completion, whatever else is in the batch", async () => {
    const e = await engine();
    const sampling = samplingParams({ temperature: 1, maxTokens: 12 });
    const obs = userObservation("count to three");
    const [alone] = await e.generate([{ policyId: "p", observation: obs, seed: 42 }], sampling);
    const mixed = await e.generate(
      [
        { policyId: "p", observation: userObservation("a much longer prompt than the other one"), seed: 1 },
        { policyId: "q", observation: obs, seed: 42 },
        { policyId: "p", observation: obs, seed: 42 },
        { policyId: "p", observation: userObservation("x"), seed: 7 },
      ],
      sampling,
    );
    expect(mixed[2]!.tokenIds).toEqual(alone!.tokenIds);
    expect(mixed[2]!.text).toBe(alone!.text);
    mixed[2]!.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(alone!.logprobs[i]!, 4));
    expect(alone!.tokenIds.length).toBeGreaterThan(0);
    expect(alone!.logprobs.length).toBe(alone!.tokenIds.length);
    expect(alone!.promptTokenIds).toEqual(e.encode("p", obs).promptTokenIds);
    // A different seed gives a different completion (12 random tokens over 259 ids).
    const [other] = await e.generate([{ policyId: "p", observation: obs, seed: 43 }], sampling);
    expect(other!.tokenIds).not.toEqual(alone!.tokenIds);
  });

  it("sampling log-probs at temperature 1 equal logprobs(): both use the tokenizer's 259 of 512 ids", async () => {
    const e = await engine();
    const obs = userObservation("hi");
    const [c] = await e.generate(
      [{ policyId: "p", observation: obs, seed: 3 }],
      samplingParams({ maxTokens: 6 }),
    );
    const sequence = { promptTokenIds: c!.promptTokenIds, completionTokenIds: c!.tokenIds };
    const [scored] = await e.logprobs("p", [sequence]);
    expect(scored!.length).toBe(6);
    c!.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(scored![i]!, 4));
    // So an on-policy PPO step starts at ratio 1: Σ(ℓ_old − ℓ) ≈ 0 and nothing is clipped.
    const m = await e.trainStep(
      "p",
      [{ ...sequence, oldLogprobs: c!.logprobs, advantage: 1 }],
      trainConfig(),
    );
    expect(Math.abs(m.approxKl)).toBeLessThan(1e-5);
    expect(m.clipFraction).toBe(0);
  });

  it("stops on stop tokens, stop strings and maxTokens", async () => {
    const e = await engine();
    const obs = userObservation("go");
    const greedy = samplingParams({ temperature: 0, maxTokens: 8 });
    const [full] = await e.generate([{ policyId: "p", observation: obs, seed: 0 }], greedy);
    expect(full!.finishReason).toBe("length");
    expect(full!.tokenIds.length).toBe(8);
    expect(full!.logprobs.every((lp) => lp === 0)).toBe(true); // greedy: q(token) = 1
    // Stop token: generation ends after the first occurrence of the 3rd greedy token, included in tokenIds.
    const stopId = full!.tokenIds[2]!;
    const firstAt = full!.tokenIds.indexOf(stopId);
    const [byToken] = await e.generate([{ policyId: "p", observation: obs, seed: 0 }], {
      ...greedy,
      stopTokenIds: [stopId],
    });
    expect(byToken!.finishReason).toBe("stop");
    expect(byToken!.tokenIds).toEqual(full!.tokenIds.slice(0, firstAt + 1));
    // Stop string: the text is cut before it.
    const text = e.tokenizerOf("p").decode(full!.tokenIds);
    const stop = text.slice(3, 5);
    if (stop.length > 0 && !text.slice(0, 3).includes(stop)) {
      const [byString] = await e.generate([{ policyId: "p", observation: obs, seed: 0 }], {
        ...greedy,
        stop: [stop],
      });
      expect(byString!.finishReason).toBe("stop");
      expect(byString!.text).toBe(text.slice(0, text.indexOf(stop)));
    }
  });

  it("trainStep loss and metrics equal policyLoss of @troupe/engine on the model's own log-probs", async () => {
    const e = await engine();
    const batch = await batchFor(e, [1.5, -0.7, 0.3, -2], 0.3);
    const lossConfig = { ...trainConfig().loss, dualClip: 3, aggregation: "sequence-mean" as const };
    const logprobs = await e.logprobs("p", batch);
    const reference = policyLoss(
      batch.map((s, i) => ({
        logprobs: logprobs[i]!,
        oldLogprobs: s.oldLogprobs,
        advantage: s.advantage,
        mask: s.completionTokenIds.map(() => 1),
      })),
      lossConfig,
    );
    const m = await e.trainStep("p", batch, trainConfig({ loss: lossConfig, microBatchSize: 3 }));
    expect(m.loss).toBeCloseTo(reference.loss, 5);
    expect(m.pgLoss).toBeCloseTo(reference.pgLoss, 5);
    expect(m.clipFraction).toBeCloseTo(reference.clipFraction, 6);
    expect(m.approxKl).toBeCloseTo(reference.approxKl, 5);
    expect(m.tokens).toBe(reference.tokens);
    expect(m.kl).toBe(0);
    expect(m.entropy).toBeGreaterThan(0);
    expect(m.gradNorm).toBeGreaterThan(0);
    expect(m.lr).toBe(1e-2);
    expect(m.optimizerStep).toBe(1);
    expect(e.policies().find((p) => p.id === "p")!.optimizerStep).toBe(1);
    expect(e.policies().find((p) => p.id === "q")!.optimizerStep).toBe(0);
  });

  it("gradient accumulation: micro-batches of 1 and of 4 give the same update", async () => {
    const a = await engine(5);
    const b = await engine(5);
    const batch = await batchFor(a, [1, -1, 0.5, 2], 0.2);
    // A first AdamW step moves each weight by ≈ lr·g/(|g| + eps): with the default eps (1e-8) a
    // gradient entry near zero turns float32 summation-order noise into an lr-sized difference.
    // A large eps keeps the update proportional to the gradient, which is what is compared here.
    const optimizer = { ...trainConfig().optimizer, eps: 1e-3 };
    const ma = await a.trainStep("p", batch, trainConfig({ microBatchSize: 1, optimizer }));
    const mb = await b.trainStep("p", batch, trainConfig({ microBatchSize: 4, optimizer }));
    expect(ma.loss).toBeCloseTo(mb.loss, 6);
    expect(ma.gradNorm).toBeCloseTo(mb.gradNorm, 5);
    for (const [name, t] of a.weightsOf("p")) {
      const u = b.weightsOf("p").get(name)!.data;
      let maxDiff = 0;
      for (let i = 0; i < t.data.length; i++) maxDiff = Math.max(maxDiff, Math.abs(t.data[i]! - u[i]!));
      expect(maxDiff, name).toBeLessThan(1e-5);
    }
  });

  it("overfits a fixed batch: positive advantages on fixed completions drive their NLL to ~0", async () => {
    const e = await engine(9);
    const cfg = trainConfig({
      optimizer: { ...defaultOptimizerConfig, lr: 1e-2, weightDecay: 0, maxGradNorm: 1 },
    });
    let batch = await batchFor(e, [1]);
    const nll = (lps: number[][]) => -lps.flat().reduce((a, b) => a + b, 0) / lps.flat().length;
    const before = nll(batch.map((s) => s.oldLogprobs as number[]));
    for (let step = 0; step < 60; step++) {
      await e.trainStep("p", batch, cfg);
      batch = await batchFor(e, [1]); // on-policy: old = current, so the step is a likelihood step
    }
    const after = nll(batch.map((s) => s.oldLogprobs as number[]));
    expect(before).toBeGreaterThan(5);
    expect(after).toBeLessThan(0.05);
  }, 120_000);

  it("save/load round-trips weights, tokenizer, optimizer state and step", async () => {
    const a = await engine(3);
    const batch = await batchFor(a, [1, -1]);
    await a.trainStep("p", batch, trainConfig());
    const files = await a.save("p");
    expect(Object.keys(files)).toEqual(
      expect.arrayContaining([
        "config.json",
        "model.safetensors",
        "optimizer.safetensors",
        "trainer_state.json",
      ]),
    );
    const b = await createOnnxEngine({ policies: [{ id: "p", checkpoint: files }] });
    engines.push(b);
    expect(b.policies()[0]!.optimizerStep).toBe(1);
    expect(await b.logprobs("p", batch)).toEqual(await a.logprobs("p", batch));
    const ma = await a.trainStep("p", batch, trainConfig());
    const mb = await b.trainStep("p", batch, trainConfig());
    expect(mb).toEqual(ma);
    // load() into an existing policy replaces its weights.
    await a.load("q", files);
    expect(await a.logprobs("q", batch)).toEqual(
      await b.logprobs("p", batch).then(async () => {
        const c = await createOnnxEngine({ policies: [{ id: "p", checkpoint: files }] });
        engines.push(c);
        return c.logprobs("p", batch);
      }),
    );
  });

  it("a non-finite loss or gradient throws naming the policy and applies no update", async () => {
    const e = await engine();
    const batch = await batchFor(e, [1]);
    // A NaN in one weight makes the loss NaN.
    e.weightsOf("p").get("model.layers.1.mlp.down_proj.weight")!.data[5] = Number.NaN;
    const before = new Map([...e.weightsOf("p")].map(([n, t]) => [n, t.data.slice()]));
    await expect(e.trainStep("p", batch, trainConfig())).rejects.toThrow(
      /policy "p": the loss is NaN; no update was applied/,
    );
    const nanAdv = batch.map((s) => ({ ...s, advantage: Number.NaN }));
    await expect(e.trainStep("p", nanAdv, trainConfig())).rejects.toThrow(/sequence 0: advantage is NaN/);
    for (const [n, t] of e.weightsOf("p")) expect(t.data).toEqual(before.get(n));
    expect(e.policies()[0]!.optimizerStep).toBe(0);
  });

  it("firstNonFinite names the first bad gradient tensor and index", () => {
    const grads = new Map([
      ["a", Float32Array.of(1, 2)],
      ["b", Float32Array.of(0, Number.POSITIVE_INFINITY, Number.NaN)],
      ["c", Float32Array.of(Number.NaN)],
    ]);
    expect(firstNonFinite(grads)).toEqual({ name: "b", index: 1, value: Number.POSITIVE_INFINITY });
    expect(firstNonFinite(new Map([["a", Float32Array.of(1)]]))).toBeUndefined();
  });

  it("bad inputs give clear errors", async () => {
    const e = await engine();
    await expect(e.logprobs("nope", [])).rejects.toThrow(/unknown policy "nope" \(known: p, q\)/);
    // Ids the byte tokenizer cannot produce (259..511) are out, like ids past vocab_size.
    for (const id of [259, 512]) {
      await expect(
        e.logprobs("p", [{ promptTokenIds: [1, 2], completionTokenIds: [3, id] }]),
      ).rejects.toThrow(
        `sequence 0: token id ${id} at completion position 1 is outside the tokenizer's vocabulary (259 ids; vocab_size 512)`,
      );
    }
    await expect(e.logprobs("p", [{ promptTokenIds: [], completionTokenIds: [3] }])).rejects.toThrow(
      /prompt is empty/,
    );
    const batch = await batchFor(e, [1]);
    await expect(e.trainStep("p", [{ ...batch[0]!, oldLogprobs: [0] }], trainConfig())).rejects.toThrow(
      /sequence 0: oldLogprobs has 1 entries/,
    );
    await expect(
      e.trainStep("p", batch, trainConfig({ loss: { ...trainConfig().loss, klCoef: 0.1 } })),
    ).rejects.toThrow(/refLogprobs are missing but loss.klCoef is 0.1/);
    await expect(e.trainStep("p", batch, trainConfig({ microBatchSize: 0 }))).rejects.toThrow(
      /microBatchSize/,
    );
    await expect(createOnnxEngine({ policies: [{ id: "p" }, { id: "p" }] })).rejects.toThrow(
      /duplicate policy id "p"/,
    );
  });
});
