import { samplingParams, userObservation } from "@troupe/core";
import { tinyQwenConfig } from "@troupe/engine";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createOnnxEngine, type OnnxEngine } from "../../src/engine.ts";
import { GenerationQueueFullError } from "../../src/runtime/continuous.ts";

const config = tinyQwenConfig(SMALL_QWEN_SHAPE);
const engines: OnnxEngine[] = [];
async function engine(continuousBatching = {}): Promise<OnnxEngine> {
  const e = await createOnnxEngine({ policies: [{ id: "p", config, seed: 3 }], continuousBatching });
  engines.push(e);
  return e;
}
afterAll(async () => {
  for (const e of engines) await e.close();
});

/** Prompts of different lengths, so rows are left-padded and sit at different cache lengths. */
const prompts = ["x", "count to three", "a much longer prompt than the other ones, with commas", "hi there"];
const request = (text: string, seed: number) => ({ policyId: "p", observation: userObservation(text), seed });

describe("continuous batching", () => {
  it("temperature 0: concurrent generations give the tokens of each one generated alone", async () => {
    const e = await engine();
    const greedy = samplingParams({ temperature: 0, maxTokens: 10 });
    const alone = [];
    for (const [i, text] of prompts.entries()) alone.push((await e.generate([request(text, i)], greedy))[0]!);
    const together = await Promise.all(
      prompts.map((text, i) => e.generateContinuous(request(text, i), greedy)),
    );
    expect(together.map((c) => c.tokenIds)).toEqual(alone.map((c) => c.tokenIds));
    expect(together.map((c) => c.text)).toEqual(alone.map((c) => c.text));
    expect(together.map((c) => c.finishReason)).toEqual(alone.map((c) => c.finishReason));
    expect(alone.map((c) => c.tokenIds.length)).toEqual([10, 10, 10, 10]);
    // All four shared their steps: one prefill, then batches of four rows.
    expect(e.continuousStats("p")).toMatchObject({ prefills: 1, maxRows: 4, waiting: 0, active: 0 });
  });

  it("seeded sampling: each sequence samples with its own seed, whoever shares its batch", async () => {
    const e = await engine();
    const sampling = samplingParams({ temperature: 1, maxTokens: 12 });
    const [alone] = await e.generate([request("count to three", 42)], sampling);
    const mixed = await Promise.all([
      e.generateContinuous(request("a much longer prompt", 1), sampling),
      e.generateContinuous(request("count to three", 42), sampling),
      e.generateContinuous(request("x", 7), sampling),
    ]);
    expect(mixed[1]!.tokenIds).toEqual(alone!.tokenIds);
    expect(mixed[1]!.text).toBe(alone!.text);
    mixed[1]!.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(alone!.logprobs[i]!, 4));
  });

  it("a sequence joins a running batch and leaves when it stops", async () => {
    const e = await engine();
    const long = samplingParams({ temperature: 0, maxTokens: 24 });
    const short = samplingParams({ temperature: 0, maxTokens: 3 });
    const [aloneLong] = await e.generate([request(prompts[2]!, 0)], long);
    const [aloneShort] = await e.generate([request(prompts[1]!, 0)], short);
    const first = e.generateContinuous(request(prompts[2]!, 0), long);
    // Let the first sequence run a few steps before the second one arrives.
    for (let i = 0; i < 4; i++) await e.logprobs("p", [{ promptTokenIds: [1], completionTokenIds: [2] }]);
    const second = await e.generateContinuous(request(prompts[1]!, 0), short);
    const stillRunning = e.continuousStats("p")!.active;
    expect(second.tokenIds).toEqual(aloneShort!.tokenIds);
    expect((await first).tokenIds).toEqual(aloneLong!.tokenIds);
    expect(stillRunning).toBe(1); // the long one, after the short one left
    expect(e.continuousStats("p")).toMatchObject({ prefills: 2, maxRows: 2 });
  });

  it("refuses past maxQueued with GenerationQueueFullError, and the queued ones still finish", async () => {
    const e = await engine({ maxBatch: 1, maxQueued: 2 });
    const greedy = samplingParams({ temperature: 0, maxTokens: 2 });
    const calls = [0, 1, 2, 3].map((i) => e.generateContinuous(request("hi", i), greedy));
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "rejected", "rejected"]);
    const refused = (settled[2] as PromiseRejectedResult).reason;
    expect(refused).toBeInstanceOf(GenerationQueueFullError);
    expect(refused.message).toBe('policy "p": 2 generations are already waiting (maxQueued); retry later');
    expect(e.continuousStats("p")).toMatchObject({ maxRows: 1, waiting: 0, active: 0 });
  });

  it("an aborted sequence leaves with the signal's reason; the others finish", async () => {
    const e = await engine();
    const greedy = samplingParams({ temperature: 0, maxTokens: 16 });
    const [alone] = await e.generate([request("hi there", 5)], greedy);
    const controller = new AbortController();
    const gone = e.generateContinuous(request("x", 1), greedy, { signal: controller.signal });
    const kept = e.generateContinuous(request("hi there", 5), greedy);
    controller.abort(new Error("client gone"));
    await expect(gone).rejects.toThrow("client gone");
    expect((await kept).tokenIds).toEqual(alone!.tokenIds);
  });

  it("close() fails every queued and running generation with one clear error", async () => {
    const e = await engine();
    const greedy = samplingParams({ temperature: 0, maxTokens: 16 });
    const calls = prompts.map((text, i) => e.generateContinuous(request(text, i), greedy));
    await e.close();
    const settled = await Promise.allSettled(calls);
    expect(settled.map((s) => (s.status === "rejected" ? (s.reason as Error).message : "fulfilled"))).toEqual(
      prompts.map(() => 'policy "p": the engine is closed'),
    );
    await expect(e.generateContinuous(request("x", 0), greedy)).rejects.toThrow("the engine is closed");
  });

  it("an unknown policy is one clear error", async () => {
    const e = await engine();
    await expect(e.generateContinuous(request("ok", 0), samplingParams({}))).resolves.toBeDefined();
    await expect(
      e.generateContinuous({ ...request("ok", 0), policyId: "nope" }, samplingParams({})),
    ).rejects.toThrow('onnx engine: unknown policy "nope" (known: p)');
  });
});
