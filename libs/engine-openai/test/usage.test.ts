import { describe, expect, it } from "vitest";
import { UsageMeter } from "../src/usage.ts";

describe("usage meter", () => {
  it("starts empty", () => {
    expect(new UsageMeter().snapshot()).toEqual({
      total: { requests: 0, failures: 0, attempts: 0, promptTokens: 0, completionTokens: 0 },
      byPolicy: {},
    });
  });

  it("counts per policy and in total; missing token counts add nothing", () => {
    const meter = new UsageMeter();
    meter.record("a", { ok: true, attempts: 1, promptTokens: 10, completionTokens: 4 });
    meter.record("a", { ok: false, attempts: 3 });
    meter.record("b", { ok: true, attempts: 2, promptTokens: 7, completionTokens: 1 });
    expect(meter.snapshot()).toEqual({
      total: { requests: 3, failures: 1, attempts: 6, promptTokens: 17, completionTokens: 5 },
      byPolicy: {
        a: { requests: 2, failures: 1, attempts: 4, promptTokens: 10, completionTokens: 4 },
        b: { requests: 1, failures: 0, attempts: 2, promptTokens: 7, completionTokens: 1 },
      },
    });
  });

  it("a snapshot is a copy: later records do not change it", () => {
    const meter = new UsageMeter();
    meter.record("a", { ok: true, attempts: 1 });
    const before = meter.snapshot();
    meter.record("a", { ok: true, attempts: 1 });
    expect(before.byPolicy.a!.requests).toBe(1);
    expect(meter.snapshot().byPolicy.a!.requests).toBe(2);
  });
});
