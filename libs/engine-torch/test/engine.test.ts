/**
 * The controller against a real worker process (CPU, Debian's torch): handshake, generate with
 * per-request seeds and stop strings, log-probs, trainStep, save/load, LoRA policies, and how
 * failures surface (Python exceptions with their traceback, a crashed worker).
 */
import { userObservation } from "@troupe/core";
import {
  decodeCheckpoint,
  defaultOptimizerConfig,
  defaultPolicyLossConfig,
  logSoftmax,
  tinyQwenConfig,
} from "@troupe/engine";
import { qwenReferenceLogits } from "@troupe/engine/reference";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { createOnnxEngine } from "@troupe/engine-onnx";
import { describe, expect, it } from "vitest";
import { createTorchEngine } from "../src/engine.ts";
import { TorchWorkerError, TorchWorkerExited } from "../src/worker-process.ts";
import { TEST_WORKER, torchAvailable } from "./torch-available.ts";
import { suiteWorkerEngine } from "./worker-engine.ts";

const config = tinyQwenConfig({ vocab_size: 260, ...SMALL_QWEN_SHAPE, initializer_range: 0.1 });

const trainConfig = {
  loss: defaultPolicyLossConfig,
  optimizer: { ...defaultOptimizerConfig, lr: 1e-3 },
  microBatchSize: 2,
};

describe.skipIf(!torchAvailable)("TorchEngine with a worker process", () => {
  const worker = suiteWorkerEngine({
    models: { tiny: { kind: "init", config, seed: 1 } },
    policies: [
      { id: "solo", model: "tiny" },
      { id: "coder", model: "tiny", lora: { r: 4, alpha: 8 } },
      { id: "tester", model: "tiny", lora: { r: 4, alpha: 8 } },
    ],
  });

  it("shakes hands and lists the policies", () => {
    expect(worker.engine.workerInfo.protocol).toBe(1);
    expect(worker.engine.workerInfo.device).toBe("cpu");
    expect(worker.engine.workerInfo.worldSize).toBe(1);
    const infos = worker.engine.policies();
    expect(infos.map((p) => p.id)).toEqual(["solo", "coder", "tester"]);
    // tied Qwen3: embed + 2 × (2 norms + q,k,v,o + q/k norms + 3 MLP) + final norm
    const perLayer = 32 + 32 + 32 * 32 + 16 * 32 + 16 * 32 + 32 * 32 + 8 + 8 + 3 * 32 * 64;
    expect(infos[0]!.parameters).toBe(260 * 32 + 2 * perLayer + 32);
    // LoRA r=4 on 7 projections per layer: r·(in + out) each
    const lora = 4 * (32 + 32 + (32 + 16) * 2 + (32 + 32) + 2 * (32 + 64) + (64 + 32));
    expect(infos[1]!.parameters).toBe(2 * lora);
    expect(infos[0]!.vocabSize).toBe(260);
  });

  it("generates the same completion for a seed whatever else is in the batch", async () => {
    const sampling = { temperature: 1, topP: 1, topK: 0, maxTokens: 12, stop: [], stopTokenIds: [] };
    const obs = userObservation("hello");
    const alone = await worker.engine.generate([{ policyId: "solo", observation: obs, seed: 42 }], sampling);
    const batched = await worker.engine.generate(
      [
        {
          policyId: "solo",
          observation: userObservation("a much longer prompt than the other one"),
          seed: 1,
        },
        { policyId: "solo", observation: obs, seed: 42 },
        { policyId: "coder", observation: obs, seed: 42 },
      ],
      sampling,
    );
    expect(batched[1]!.tokenIds).toEqual(alone[0]!.tokenIds);
    // padding changes the matmul shapes: float32 rounding differs, nothing more
    batched[1]!.logprobs.forEach((x, t) => expect(x).toBeCloseTo(alone[0]!.logprobs[t]!, 5));
    // a fresh adapter (B = 0) is the base model itself
    expect(batched[2]!.tokenIds).toEqual(alone[0]!.tokenIds);
    expect(batched[0]!.tokenIds).not.toEqual(alone[0]!.tokenIds);
    const c = alone[0]!;
    expect(c.promptTokenIds).toEqual(worker.engine.tokenizerOf("solo").encodeChat(obs.messages));
    expect(c.tokenIds.length).toBe(c.logprobs.length);
    expect(c.tokenIds.length).toBeLessThanOrEqual(12);
  });

  it("reports sampling log-probs that the logprobs op reproduces at temperature 1 (both over the tokenizer's ids)", async () => {
    const sampling = { temperature: 1, topP: 1, topK: 0, maxTokens: 8, stop: [], stopTokenIds: [] };
    const [c] = await worker.engine.generate(
      [{ policyId: "solo", observation: userObservation("score me"), seed: 3 }],
      sampling,
    );
    const [scored] = await worker.engine.logprobs("solo", [
      { promptTokenIds: c!.promptTokenIds, completionTokenIds: c!.tokenIds },
    ]);
    // Sampling draws from the tokenizer's 259 ids only (the model has 260 rows), and scoring uses
    // the same distribution: log q = log p − log Σ_{v<259} p_v, with p from the float64 reference
    // forward of the same weights over all 260 rows.
    const { weights } = decodeCheckpoint(await worker.engine.save("solo"));
    const ids = [...c!.promptTokenIds, ...c!.tokenIds];
    const logits = qwenReferenceLogits(config, weights, ids.slice(0, -1));
    const P = c!.promptTokenIds.length;
    expect(c!.tokenIds.length).toBeGreaterThan(2);
    for (let t = 0; t < scored!.length; t++) {
      const row = logSoftmax(logits.subarray((P - 1 + t) * 260, (P + t) * 260));
      const usableMass = row.slice(0, 259).reduce((m, lp) => m + Math.exp(lp), 0);
      expect(scored![t]).toBeCloseTo(row[c!.tokenIds[t]!]! - Math.log(usableMass), 4);
      expect(c!.logprobs[t]!).toBeCloseTo(scored![t]!, 5);
    }
  });

  it("greedy decoding has log-prob 0 and stops at a stop token, which ends the tokens but not the text", async () => {
    const greedy = { temperature: 0, topP: 1, topK: 0, maxTokens: 6, stop: [], stopTokenIds: [] };
    const [free] = await worker.engine.generate(
      [{ policyId: "solo", observation: userObservation("x"), seed: 0 }],
      greedy,
    );
    expect(free!.logprobs.every((x) => x === 0)).toBe(true);
    const third = free!.tokenIds[2]!;
    const [stopped] = await worker.engine.generate(
      [{ policyId: "solo", observation: userObservation("x"), seed: 0 }],
      { ...greedy, stopTokenIds: [third] },
    );
    const firstHit = free!.tokenIds.indexOf(third);
    expect(stopped!.tokenIds).toEqual(free!.tokenIds.slice(0, firstHit + 1));
    expect(stopped!.finishReason).toBe("stop");
    const tokenizer = worker.engine.tokenizerOf("solo");
    expect(stopped!.text).toBe(tokenizer.decode(free!.tokenIds.slice(0, firstHit)));
  });

  it("cuts the text at a stop string and the tokens at the token that completed it", async () => {
    const sampling = { temperature: 1, topP: 1, topK: 0, maxTokens: 10, stop: [], stopTokenIds: [] };
    const [free] = await worker.engine.generate(
      [{ policyId: "solo", observation: userObservation("y"), seed: 9 }],
      sampling,
    );
    const tokenizer = worker.engine.tokenizerOf("solo");
    const ids = free!.tokenIds.filter((t) => t < 256); // plain bytes: decodes one char per byte when ASCII
    const stopText = tokenizer.decode(free!.tokenIds.slice(3, 5));
    const [cut] = await worker.engine.generate(
      [{ policyId: "solo", observation: userObservation("y"), seed: 9 }],
      {
        ...sampling,
        stop: [stopText],
      },
    );
    const full = tokenizer.decode(free!.tokenIds);
    expect(ids.length).toBeGreaterThan(0);
    expect(cut!.text).toBe(full.slice(0, full.indexOf(stopText)));
    expect(cut!.finishReason).toBe("stop");
    expect(tokenizer.decode(cut!.tokenIds)).toContain(stopText);
    expect(tokenizer.decode(cut!.tokenIds.slice(0, -1))).not.toContain(stopText);
    expect(cut!.logprobs).toEqual(free!.logprobs.slice(0, cut!.tokenIds.length));
  });

  it("trains: one step moves the log-probs of a positive-advantage sequence up", async () => {
    const seq = worker.engine.encode("solo", userObservation("train"), "ok!");
    const [before] = await worker.engine.logprobs("solo", [seq]);
    const metrics = await worker.engine.trainStep(
      "solo",
      [
        { ...seq, oldLogprobs: before!, advantage: 1 },
        {
          ...worker.engine.encode("solo", userObservation("other"), "no"),
          oldLogprobs: [-5, -5, -5],
          advantage: -1,
        },
      ],
      trainConfig,
    );
    expect(metrics.optimizerStep).toBe(1);
    expect(metrics.tokens).toBe(seq.completionTokenIds.length + 3);
    expect(metrics.lr).toBe(1e-3);
    expect(metrics.gradNorm).toBeGreaterThan(0);
    const [after] = await worker.engine.logprobs("solo", [seq]);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect(sum(after!)).toBeGreaterThan(sum(before!));
    expect(worker.engine.policies().find((p) => p.id === "solo")!.optimizerStep).toBe(1);
  });

  it("trains one LoRA adapter without touching the base or the other adapter", async () => {
    const seq = worker.engine.encode("coder", userObservation("lora"), "yes");
    const [base] = await worker.engine.logprobs("solo", [seq]);
    const [coder0] = await worker.engine.logprobs("coder", [seq]);
    await worker.engine.trainStep("coder", [{ ...seq, oldLogprobs: coder0!, advantage: 1 }], trainConfig);
    const [coder1] = await worker.engine.logprobs("coder", [seq]);
    const [tester] = await worker.engine.logprobs("tester", [seq]);
    const [baseAfter] = await worker.engine.logprobs("solo", [seq]);
    expect(coder1).not.toEqual(coder0);
    expect(baseAfter).toEqual(base);
    // the tester adapter is untouched: still the frozen base (not the trained "solo" copy)
    expect(tester!.reduce((a, b) => a + b)).not.toBeCloseTo(
      coder1!.reduce((a, b) => a + b),
      6,
    );
    const files = await worker.engine.save("coder");
    expect(Object.keys(files).sort()).toEqual([
      "adapter_config.json",
      "adapter_model.safetensors",
      "config.json",
      "optimizer.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
      "trainer_state.json",
    ]);
    const adapterConfig = JSON.parse(new TextDecoder().decode(files["adapter_config.json"]));
    expect(adapterConfig).toMatchObject({ peft_type: "LORA", r: 4, lora_alpha: 8 });
    // loading the coder's adapter into the tester makes them the same policy
    await worker.engine.load("tester", files);
    expect(worker.engine.policies().find((p) => p.id === "tester")!.optimizerStep).toBe(1);
    const [testerNow] = await worker.engine.logprobs("tester", [seq]);
    expect(testerNow).toEqual(coder1);
    // the merged export (LoRA folded into the base) is a plain HF model: the embedded engine serves
    // it with the adapter policy's log-probs
    const exportedFiles = await worker.engine.exportPolicy("coder");
    const exported = decodeCheckpoint(exportedFiles);
    expect(exported.config.hidden_size).toBe(32);
    expect(Object.keys(exportedFiles)).not.toContain("adapter_model.safetensors");
    const onnx = await createOnnxEngine({ policies: [{ id: "coder", checkpoint: exportedFiles }] });
    const [served] = await onnx.logprobs("coder", [seq]);
    await onnx.close();
    served!.forEach((lp, t) => {
      expect(Math.abs(lp - coder1![t]!)).toBeLessThan(1e-4);
    });
  });

  it("saves and loads a full policy as an HF checkpoint (weights, optimizer state, step)", async () => {
    const files = await worker.engine.save("solo");
    const ckpt = decodeCheckpoint(files);
    expect(ckpt.trainerState?.optimizer_step).toBe(1);
    expect(ckpt.optimizerState?.step).toBe(1);
    expect(ckpt.weights.get("model.embed_tokens.weight")!.shape).toEqual([260, 32]);
    const seq = worker.engine.encode("solo", userObservation("rt"), "z");
    const [before] = await worker.engine.logprobs("solo", [seq]);
    await worker.engine.trainStep("solo", [{ ...seq, oldLogprobs: before!, advantage: 2 }], trainConfig);
    await worker.engine.load("solo", files);
    expect(worker.engine.policies().find((p) => p.id === "solo")!.optimizerStep).toBe(1);
    const [restored] = await worker.engine.logprobs("solo", [seq]);
    expect(restored).toEqual(before);
  });

  it("surfaces a Python exception with its traceback and keeps serving", async () => {
    const seq = { promptTokenIds: [1, 2], completionTokenIds: [999] };
    const error = await worker.engine.logprobs("solo", [seq]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TorchWorkerError);
    expect((error as TorchWorkerError).pythonType).toBe("ValueError");
    expect((error as Error).message).toMatch(
      /sequence 0: a token id is outside the tokenizer's ids \[0, 259\)/,
    );
    expect((error as TorchWorkerError).pythonTraceback).toMatch(/Traceback \(most recent call last\)/);
    expect((error as TorchWorkerError).pythonTraceback).toMatch(/engine\.py/);
    await expect(worker.engine.logprobs("nobody", [seq])).rejects.toThrow(/no policy "nobody"/);
    const [ok] = await worker.engine.logprobs("solo", [{ promptTokenIds: [1, 2], completionTokenIds: [3] }]);
    expect(ok).toHaveLength(1);
  });
});

describe.skipIf(!torchAvailable)("worker failures", () => {
  it("reports a crashed worker with its exit code and stderr, and fails later calls", async () => {
    const engine = await createTorchEngine({
      ...TEST_WORKER,
      models: { tiny: { kind: "init", config, seed: 0 } },
      policies: [{ id: "p", model: "tiny" }],
    });
    const crash = await engine.crashWorkerForTest(7).catch((e: unknown) => e);
    expect(crash).toBeInstanceOf(TorchWorkerExited);
    expect((crash as Error).message).toMatch(/exited \(code 7\)/);
    expect((crash as Error).message).toMatch(/crash requested/);
    await expect(engine.logprobs("p", [{ promptTokenIds: [1], completionTokenIds: [2] }])).rejects.toThrow(
      /exited \(code 7\)/,
    );
    await engine.close();
  }, 60_000);

  it("fails to start with a clear error when the interpreter does not exist", async () => {
    await expect(
      createTorchEngine({
        python: "/nonexistent/python3",
        models: { tiny: { kind: "init", config } },
        policies: [{ id: "p", model: "tiny" }],
      }),
    ).rejects.toThrow(/cannot start \/nonexistent\/python3/);
  });
});
