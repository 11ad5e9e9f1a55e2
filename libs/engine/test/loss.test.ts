import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { aggregationWeights, defaultPolicyLossConfig, policyLoss, tokenLoss } from "../src/loss.ts";

const cfg = defaultPolicyLossConfig; // ε = 0.2 both sides

describe("tokenLoss (hand-computed)", () => {
  // ℓ = −1, ℓ_old = −1.5 → r = e^0.5 = 1.6487212707
  const r = Math.exp(0.5);

  it("positive advantage above 1+ε: clipped, flat", () => {
    const t = tokenLoss(-1, -1.5, 2, cfg);
    // L¹ = −2·1.6487 = −3.2974; L² = −2·1.2 = −2.4; max = −2.4
    expect(t.pg).toBeCloseTo(-2.4, 12);
    expect(t.clipped).toBe(true);
    expect(t.grad).toBe(0);
  });

  it("negative advantage above 1+ε: unclipped (pessimistic bound), gradient −A·r", () => {
    const t = tokenLoss(-1, -1.5, -1, cfg);
    // L¹ = 1.6487; L² = 1.2; max = 1.6487
    expect(t.pg).toBeCloseTo(r, 12);
    expect(t.clipped).toBe(false);
    expect(t.grad).toBeCloseTo(r, 12);
  });

  it("dual clip caps the negative-advantage loss at −A·c", () => {
    const t = tokenLoss(-1, -1.5, -1, { ...cfg, dualClip: 1.5 });
    expect(t.pg).toBe(1.5);
    expect(t.clipped).toBe(true);
    expect(t.grad).toBe(0);
  });

  it("inside the trust region: L = −A·r", () => {
    const t = tokenLoss(-1, -1.1, 0.5, cfg); // r = e^0.1 = 1.10517
    expect(t.pg).toBeCloseTo(-0.5 * Math.exp(0.1), 12);
    expect(t.grad).toBeCloseTo(-0.5 * Math.exp(0.1), 12);
  });

  it("k3 KL to the reference: e^δ − δ − 1, δ = ℓ_ref − ℓ", () => {
    const t = tokenLoss(-1.5, -1.5, 0, { ...cfg, klCoef: 0.1 }, -1);
    // δ = 0.5: e^0.5 − 1.5 = 0.1487212707
    expect(t.kl).toBeCloseTo(Math.exp(0.5) - 1.5, 12);
    expect(t.loss).toBeCloseTo(0.1 * (Math.exp(0.5) - 1.5), 12);
    expect(t.grad).toBeCloseTo(0.1 * (1 - Math.exp(0.5)), 12);
  });

  it("entropy bonus lowers the loss by β·H", () => {
    const t = tokenLoss(-1, -1, 1, { ...cfg, entropyCoef: 0.01 }, undefined, 2);
    expect(t.loss).toBeCloseTo(-1 - 0.02, 12);
  });
});

describe("aggregation", () => {
  const masks = [
    [1, 1, 0],
    [1, 0, 0],
  ];
  it("token-mean weighs every token 1/3", () => {
    expect(aggregationWeights(masks, "token-mean")).toEqual([
      [1 / 3, 1 / 3, 0],
      [1 / 3, 0, 0],
    ]);
  });
  it("sequence-mean weighs each sequence 1/2, split over its tokens", () => {
    expect(aggregationWeights(masks, "sequence-mean")).toEqual([
      [0.25, 0.25, 0],
      [0.5, 0, 0],
    ]);
  });
  it("sequence-sum weighs each token 1/B", () => {
    expect(aggregationWeights(masks, "sequence-sum")).toEqual([
      [0.5, 0.5, 0],
      [0.5, 0, 0],
    ]);
  });
});

describe("policyLoss", () => {
  it("on-policy batch: loss = −token-mean advantage, no clipping, zero approx-KL", () => {
    const out = policyLoss([
      { logprobs: [-1, -2], oldLogprobs: [-1, -2], advantage: 1, mask: [1, 1] },
      { logprobs: [-0.5, -3], oldLogprobs: [-0.5, -3], advantage: -2, mask: [1, 0] },
    ]);
    // tokens: A = 1, 1, −2 → loss = −(1 + 1 − 2)/3 = 0
    expect(out.loss).toBeCloseTo(0, 12);
    expect(out.tokens).toBe(3);
    expect(out.clipFraction).toBe(0);
    expect(out.approxKl).toBe(0);
    expect(out.gradLogprobs).toEqual([
      [-1 / 3, -1 / 3],
      [2 / 3, 0],
    ]);
  });

  it("names the sequence and field on a length mismatch", () => {
    expect(() => policyLoss([{ logprobs: [-1, -1], oldLogprobs: [-1], advantage: 1, mask: [1, 1] }])).toThrow(
      /sequence 0: oldLogprobs has 1 entries, logprobs has 2/,
    );
  });

  it("the supervised term: with A = 0 and β_NLL = 1 the loss is the token-mean −ℓ, whatever ℓ_old", () => {
    const out = policyLoss(
      [
        { logprobs: [-0.5, -2], oldLogprobs: [0, 0], advantage: 0, mask: [1, 1] },
        { logprobs: [-1], oldLogprobs: [-7], advantage: 0, mask: [1] },
      ],
      { ...cfg, aggregation: "token-mean", nllCoef: 1 },
    );
    expect(out.loss).toBeCloseTo((0.5 + 2 + 1) / 3, 12);
    expect(Math.abs(out.pgLoss)).toBe(0);
    expect(out.gradLogprobs).toEqual([[-1 / 3, -1 / 3], [-1 / 3]]);
  });

  it("refuses a batch with no masked-in token", () => {
    expect(() => policyLoss([{ logprobs: [-1], oldLogprobs: [-1], advantage: 1, mask: [0] }])).toThrow(
      /no masked-in/,
    );
  });

  it("gradLogprobs matches central finite differences (property)", () => {
    const seq = fc.record({
      logprobs: fc.array(fc.double({ min: -3, max: -0.05, noNaN: true }), { minLength: 1, maxLength: 5 }),
      shift: fc.array(fc.double({ min: -0.4, max: 0.4, noNaN: true }), { minLength: 5, maxLength: 5 }),
      ref: fc.array(fc.double({ min: -3, max: -0.05, noNaN: true }), { minLength: 5, maxLength: 5 }),
      advantage: fc.double({ min: -2, max: 2, noNaN: true }),
    });
    fc.assert(
      fc.property(
        fc.array(seq, { minLength: 1, maxLength: 3 }),
        fc.constantFrom("token-mean" as const, "sequence-mean" as const, "sequence-sum" as const),
        (raw, aggregation) => {
          const config = { ...cfg, aggregation, klCoef: 0.05, dualClip: 3, nllCoef: 0.3 };
          const batch = raw.map((s) => ({
            logprobs: s.logprobs,
            oldLogprobs: s.logprobs.map((l, t) => l + s.shift[t]!),
            refLogprobs: s.logprobs.map((_, t) => s.ref[t]!),
            advantage: s.advantage,
            mask: s.logprobs.map(() => 1),
          }));
          const { gradLogprobs } = policyLoss(batch, config);
          const h = 1e-6;
          batch.forEach((s, b) =>
            s.logprobs.forEach((_, t) => {
              const bump = (d: number) =>
                policyLoss(
                  batch.map((x, bb) =>
                    bb === b ? { ...x, logprobs: x.logprobs.map((l, tt) => (tt === t ? l + d : l)) } : x,
                  ),
                  config,
                ).loss;
              // Skip points within h of a clip kink, where the derivative is one-sided.
              const r = Math.exp(s.logprobs[t]! - s.oldLogprobs[t]!);
              if (Math.abs(r - 0.8) < 1e-4 || Math.abs(r - 1.2) < 1e-4) return;
              const numeric = (bump(h) - bump(-h)) / (2 * h);
              expect(gradLogprobs[b]![t]!).toBeCloseTo(numeric, 5);
            }),
          );
        },
      ),
      { numRuns: 100 },
    );
  });
});
