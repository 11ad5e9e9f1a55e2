import { samplingParams, userObservation } from "@troupe/core";
import { tinyQwenConfig } from "@troupe/engine";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import * as ort from "onnxruntime-node";
import { describe, expect, it, vi } from "vitest";
import { createOnnxEngine } from "../src/engine.ts";
import { meterOrtCpu, ortCpuUsage } from "../src/ort-cpu.ts";

describe("meterOrtCpu", () => {
  it("counts every session run, and (timing each) its CPU time within the process's", async () => {
    expect(ortCpuUsage()).toEqual({ runs: 0, cpuMs: 0 }); // nothing before it starts
    expect(() => meterOrtCpu({ sampleEvery: 0 })).toThrow(
      "meterOrtCpu: sampleEvery must be an integer ≥ 1, got 0",
    );
    meterOrtCpu({ sampleEvery: 1 });
    meterOrtCpu(); // idempotent: runs are not counted twice, and the first call's sampling holds
    const engine = await createOnnxEngine({
      policies: [{ id: "p", config: tinyQwenConfig(SMALL_QWEN_SHAPE), seed: 3 }],
    });
    // Every InferenceSession.run of the engine, counted independently of the meter.
    const runs = vi.spyOn(
      (ort.InferenceSession as unknown as { prototype: ort.InferenceSession }).prototype,
      "run",
    );
    try {
      const sampling = samplingParams({ temperature: 0, maxTokens: 12 });
      const cpuBefore = process.cpuUsage();
      const rounds = 40;
      for (let i = 0; i < rounds; i++) {
        const [completion] = await engine.generate(
          [{ policyId: "p", observation: userObservation(`prompt ${i}`), seed: i }],
          sampling,
        );
        expect(completion!.tokenIds).toHaveLength(12);
      }
      const spent = process.cpuUsage(cpuBefore);
      const usage = ortCpuUsage();
      expect(runs.mock.calls.length).toBeGreaterThanOrEqual(rounds); // a prefill at least, each
      expect(usage.runs).toBe(runs.mock.calls.length);
      // Every run's CPU time: some, and within what the process spent over the loop.
      expect(usage.cpuMs).toBeGreaterThan(0);
      expect(usage.cpuMs).toBeLessThanOrEqual((spent.user + spent.system) / 1000);
    } finally {
      runs.mockRestore();
      await engine.close();
    }
  });
});
