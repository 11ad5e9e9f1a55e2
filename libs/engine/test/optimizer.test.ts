import { describe, expect, it } from "vitest";
import {
  AdamW,
  clipGradNorm,
  decayedByDefault,
  decodeOptimizerState,
  encodeOptimizerState,
  learningRate,
} from "../src/optimizer.ts";
import { cloneWeights, type Weights } from "../src/tensor.ts";
import { defaultOptimizerConfig, type OptimizerConfig } from "../src/types.ts";

const config = (overrides: Partial<OptimizerConfig>): OptimizerConfig => ({
  ...defaultOptimizerConfig,
  maxGradNorm: 0,
  ...overrides,
});
const grads = (entries: Record<string, number[]>) =>
  new Map(Object.entries(entries).map(([k, v]) => [k, Float32Array.from(v)]));

describe("AdamW", () => {
  it("matches hand-computed steps for an undecayed bias with changing gradients", () => {
    // p₀ = 0.2 (1-D: no decay), η = 0.01, β₁ = 0.9, β₂ = 0.999, ε = 1e-8.
    // step 1, g = 0.5:   m = 0.05, v = 0.001·0.25 = 0.00025, m̂ = 0.05/0.1 = 0.5, v̂ = 0.00025/0.001 = 0.25
    //                    p = 0.2 − 0.01 · 0.5/(0.5 + 1e-8) = 0.1900000002
    // step 2, g = −0.25: m = 0.045 − 0.025 = 0.02, v = 0.999·0.00025 + 0.001·0.0625 = 0.00031225
    //                    m̂ = 0.02/0.19 = 0.10526316, v̂ = 0.00031225/0.001999 = 0.15620310, √v̂ = 0.39522538
    //                    p = 0.19 − 0.01 · 0.10526316/0.39522538 = 0.18733663
    const params: Weights = new Map([["b", { shape: [1], data: Float32Array.of(0.2) }]]);
    const opt = new AdamW(params, config({ lr: 0.01, weightDecay: 0.1 }));
    expect(opt.isDecayed("b")).toBe(false);
    opt.step(grads({ b: [0.5] }));
    expect(params.get("b")!.data[0]).toBeCloseTo(0.1900000002, 7);
    expect(opt.state().expAvg.get("b")![0]).toBeCloseTo(0.05, 8);
    expect(opt.state().expAvgSq.get("b")![0]).toBeCloseTo(0.00025, 10);
    const result = opt.step(grads({ b: [-0.25] }));
    expect(result).toMatchObject({ lr: 0.01, step: 2 });
    expect(params.get("b")!.data[0]).toBeCloseTo(0.18733663, 7);
    expect(opt.state().expAvgSq.get("b")![0]).toBeCloseTo(0.00031225, 10);
  });

  it("decays matrices (p ← p − ηλp) and clips the global gradient norm first", () => {
    // Two [1,1] matrices a = 1, b = −1; η = 0.01, λ = 0.1, clip 1.
    // step 1: g = (3, 4), ‖g‖ = 5, coef = 1/(5 + 1e-6) → g = (0.59999988, 0.79999984)
    //   decay: a = 1·(1 − 0.001) = 0.999, b = −0.999
    //   m = 0.1 g = (0.06, 0.08), v = 0.001 g² = (0.00036, 0.00064), m̂/√v̂ = sign(g) = (1, 1)
    //   a = 0.999 − 0.01 = 0.989, b = −0.999 − 0.01 = −1.009
    // step 2: g = (0.3, −0.4), ‖g‖ = 0.5 < 1 (not clipped)
    //   decay: a = 0.989·0.999 = 0.988011, b = −1.007991
    //   m = 0.9·(0.06, 0.08) + 0.1·(0.3, −0.4) = (0.084, 0.032);  m̂ = m/0.19 = (0.44210526, 0.16842105)
    //   v = 0.999·(0.00036, 0.00064) + 0.001·(0.09, 0.16) = (0.00044964, 0.00079936); v̂ = v/0.001999
    //   √v̂ = (0.47427171, 0.63236063);  a −= 0.01·0.44210526/0.47427171 = 0.00932177 → 0.97868923
    //                                   b −= 0.01·0.16842105/0.63236063 = 0.00266337 → −1.01065437
    const params: Weights = new Map([
      ["a", { shape: [1, 1], data: Float32Array.of(1) }],
      ["b", { shape: [1, 1], data: Float32Array.of(-1) }],
    ]);
    const opt = new AdamW(params, config({ lr: 0.01, weightDecay: 0.1, maxGradNorm: 1 }));
    const first = grads({ a: [3], b: [4] });
    expect(opt.step(first).gradNorm).toBeCloseTo(5, 12);
    expect(first.get("a")![0]).toBeCloseTo(0.6, 6); // clipped in place
    expect(params.get("a")!.data[0]).toBeCloseTo(0.989, 6);
    expect(params.get("b")!.data[0]).toBeCloseTo(-1.009, 6);
    expect(opt.step(grads({ a: [0.3], b: [-0.4] })).gradNorm).toBeCloseTo(0.5, 7);
    expect(params.get("a")!.data[0]).toBeCloseTo(0.9786892, 6);
    expect(params.get("b")!.data[0]).toBeCloseTo(-1.0106544, 6);
  });

  it("decays only ≥ 2-D tensors by default: with zero gradients only matrices shrink", () => {
    const params: Weights = new Map([
      ["model.embed_tokens.weight", { shape: [2, 1], data: Float32Array.of(1, 2) }],
      ["model.norm.weight", { shape: [2], data: Float32Array.of(1, 1) }],
      ["q_proj.bias", { shape: [1], data: Float32Array.of(0.5) }],
    ]);
    const opt = new AdamW(params, config({ lr: 0.1, weightDecay: 0.5 }));
    opt.step(grads({ "model.embed_tokens.weight": [0, 0], "model.norm.weight": [0, 0], "q_proj.bias": [0] }));
    expect(Array.from(params.get("model.embed_tokens.weight")!.data)).toEqual([
      0.949999988079071, 1.899999976158142,
    ]); // ·(1 − 0.05)
    expect(Array.from(params.get("model.norm.weight")!.data)).toEqual([1, 1]);
    expect(Array.from(params.get("q_proj.bias")!.data)).toEqual([0.5]);
    expect(decayedByDefault("x", [3, 4])).toBe(true);
    expect(decayedByDefault("x", [4])).toBe(false);
  });

  it("follows the schedule's learning rate step by step", () => {
    const params: Weights = new Map([["w", { shape: [1], data: Float32Array.of(0) }]]);
    const opt = new AdamW(params, config({ lr: 1, warmupSteps: 2 }));
    // Adam's first step moves by exactly lr·sign(g) (up to ε): warm-up lr 0.5, then 1.
    expect(opt.step(grads({ w: [1] })).lr).toBe(0.5);
    expect(params.get("w")!.data[0]).toBeCloseTo(-0.5, 6);
    expect(opt.step(grads({ w: [1] })).lr).toBe(1);
  });

  it("skips the update on a non-finite gradient norm", () => {
    const params: Weights = new Map([["w", { shape: [2], data: Float32Array.of(1, 2) }]]);
    const opt = new AdamW(params, config({ maxGradNorm: 1 }));
    const result = opt.step(grads({ w: [Number.NaN, 1] }));
    expect(Number.isNaN(result.gradNorm)).toBe(true);
    expect(result.step).toBe(0);
    expect(Array.from(params.get("w")!.data)).toEqual([1, 2]);
  });

  it("names a missing, wrongly sized or unknown gradient", () => {
    const params: Weights = new Map([["w", { shape: [2], data: new Float32Array(2) }]]);
    const opt = new AdamW(params, config({}));
    expect(() => opt.step(new Map())).toThrow('no gradient for "w"');
    expect(() => opt.step(grads({ w: [1] }))).toThrow('gradient of "w" has 1 values, the parameter 2');
    expect(() => opt.step(grads({ w: [1, 1], v: [1] }))).toThrow('gradient for unknown parameter "v"');
  });

  it("resumes from saved state exactly like an uninterrupted run", () => {
    const start: Weights = new Map([
      ["m", { shape: [2, 2], data: Float32Array.of(0.1, -0.2, 0.3, 0.4) }],
      ["n", { shape: [2], data: Float32Array.of(1, 1) }],
    ]);
    const g = (k: number) => grads({ m: [k, -k, 0.5 * k, 1], n: [0.1 * k, -0.2] });
    const cfg = config({ lr: 0.05, weightDecay: 0.1, maxGradNorm: 1 });

    const straight = cloneWeights(start);
    const a = new AdamW(straight, cfg);
    for (const k of [1, 2, 3]) a.step(g(k));

    const resumed = cloneWeights(start);
    const b = new AdamW(resumed, cfg);
    b.step(g(1));
    const bytes = encodeOptimizerState(b.state(), resumed);
    const c = new AdamW(resumed, cfg);
    c.loadState(decodeOptimizerState(bytes, resumed));
    expect(c.steps).toBe(1);
    c.step(g(2));
    c.step(g(3));
    expect(resumed.get("m")!.data).toEqual(straight.get("m")!.data);
    expect(resumed.get("n")!.data).toEqual(straight.get("n")!.data);
  });

  it("validates saved state against the parameters", () => {
    const params: Weights = new Map([["w", { shape: [2, 1], data: new Float32Array(2) }]]);
    const bytes = encodeOptimizerState(new AdamW(params, config({})).state(), params);
    const other: Weights = new Map([["w", { shape: [1, 2], data: new Float32Array(2) }]]);
    expect(() => decodeOptimizerState(bytes, other)).toThrow("w.exp_avg: expected [1,2], got [2,1]");
    const renamed: Weights = new Map([["v", { shape: [2, 1], data: new Float32Array(2) }]]);
    expect(() => decodeOptimizerState(bytes, renamed)).toThrow("v.exp_avg: missing");
  });
});

describe("clipGradNorm", () => {
  it("returns the pre-clip norm and scales by maxNorm/(‖g‖ + 1e-6)", () => {
    const g = [Float32Array.of(3), Float32Array.of(4)];
    expect(clipGradNorm(g, 1)).toBe(5);
    expect(g[0]![0]).toBeCloseTo(3 / (5 + 1e-6), 7);
    expect(g[1]![0]).toBeCloseTo(4 / (5 + 1e-6), 7);
    const small = [Float32Array.of(0.3, 0.4)];
    expect(clipGradNorm(small, 1)).toBeCloseTo(0.5, 7);
    expect(Array.from(small[0]!)).toEqual([Math.fround(0.3), Math.fround(0.4)]);
    const measured = [Float32Array.of(30, 40)];
    expect(clipGradNorm(measured, 0)).toBe(50); // 0 disables clipping
    expect(Array.from(measured[0]!)).toEqual([30, 40]);
  });
});

describe("learningRate", () => {
  const base = { ...defaultOptimizerConfig, lr: 1, warmupSteps: 4, totalSteps: 14, minLrRatio: 0.1 };

  it("warms up linearly from the first step", () => {
    expect([0, 1, 2, 3, 4].map((s) => learningRate(s, { ...base, schedule: "constant" }))).toEqual([
      0.25, 0.5, 0.75, 1, 1,
    ]);
    expect(learningRate(1000, { ...base, schedule: "constant" })).toBe(1);
  });

  it("decays by cosine and linearly to minLrRatio", () => {
    const cosine = { ...base, schedule: "cosine" as const };
    const linear = { ...base, schedule: "linear" as const };
    // progress π = (step − 4)/10
    expect(learningRate(4, cosine)).toBeCloseTo(1, 12);
    expect(learningRate(6, cosine)).toBeCloseTo(0.1 + 0.9 * 0.5 * (1 + Math.cos(0.2 * Math.PI)), 12); // 0.9140576
    expect(learningRate(9, cosine)).toBeCloseTo(0.55, 12);
    expect(learningRate(14, cosine)).toBeCloseTo(0.1, 12);
    expect(learningRate(99, cosine)).toBeCloseTo(0.1, 12);
    expect(learningRate(6, linear)).toBeCloseTo(0.82, 12);
    expect(learningRate(14, linear)).toBeCloseTo(0.1, 12);
    expect(() => learningRate(-1, linear)).toThrow("step");
  });
});
