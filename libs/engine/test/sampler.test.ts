import { Rng } from "@troupe/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { drawFrom, entropy, logSoftmax, sampleToken, samplingDistribution } from "../src/sampler.ts";

// Logits whose softmax is exactly [0.1, 0.2, 0.3, 0.4] (softmax(log p) = p when Σp = 1).
const PROBS = [0.1, 0.2, 0.3, 0.4];
const LOGITS = Float32Array.from(PROBS.map(Math.log));
/** The same logits in float64, for checks to 12 digits. */
const LOGITS_F64 = Float64Array.from(PROBS.map(Math.log));
const exact = (dist: { tokenIds: Int32Array; probs: Float64Array }) => ({
  ids: Array.from(dist.tokenIds),
  probs: Array.from(dist.probs),
});
/** The distribution `settings` make of PROBS, as plain arrays. */
const ofProbs = (settings: Parameters<typeof samplingDistribution>[1]) =>
  exact(samplingDistribution(LOGITS_F64, settings));

describe("logSoftmax", () => {
  it("matches hand values and is shift-invariant", () => {
    const logp = logSoftmax([0, Math.log(3)]); // p = [1/4, 3/4]
    expect(logp[0]).toBeCloseTo(Math.log(0.25), 14);
    expect(logp[1]).toBeCloseTo(Math.log(0.75), 14);
    const shifted = logSoftmax([1000, 1000 + Math.log(3)]); // no overflow
    expect(shifted[0]).toBeCloseTo(Math.log(0.25), 12);
    expect(() => logSoftmax([])).toThrow("empty");
    expect(() => logSoftmax([Number.NEGATIVE_INFINITY])).toThrow("largest logit is -Infinity");
  });

  it("exponentiates to a distribution (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -50, max: 50, noNaN: true }), { minLength: 1, maxLength: 30 }),
        (xs) => {
          const logp = logSoftmax(xs);
          let total = 0;
          for (const l of logp) {
            expect(l).toBeLessThanOrEqual(1e-12);
            total += Math.exp(l);
          }
          expect(total).toBeCloseTo(1, 12);
        },
      ),
    );
  });
});

describe("samplingDistribution", () => {
  it("is the softmax at temperature 1, in id order", () => {
    const d = exact(samplingDistribution(LOGITS, { temperature: 1, topK: 0, topP: 1 }));
    expect(d.ids).toEqual([0, 1, 2, 3]);
    d.probs.forEach((p, i) => expect(p).toBeCloseTo(PROBS[i]!, 6));
  });

  it("divides logits by the temperature", () => {
    // logits 2·log p at T = 2 give back p.
    const doubled = PROBS.map((p) => 2 * Math.log(p));
    const d = exact(samplingDistribution(doubled, { temperature: 2, topK: 0, topP: 1 }));
    d.probs.forEach((p, i) => expect(p).toBeCloseTo(PROBS[i]!, 12));
    // T = 0.5 squares and renormalises: p² / Σp² with Σp² = 0.01+0.04+0.09+0.16 = 0.3.
    const sharp = ofProbs({ temperature: 0.5, topK: 0, topP: 1 });
    expect(sharp.probs[3]).toBeCloseTo(0.16 / 0.3, 12);
  });

  it("keeps the k most probable tokens for top-k, renormalised", () => {
    const d = ofProbs({ temperature: 1, topK: 2, topP: 1 });
    expect(d.ids).toEqual([3, 2]);
    expect(d.probs[0]).toBeCloseTo(4 / 7, 12);
    expect(d.probs[1]).toBeCloseTo(3 / 7, 12);
  });

  it("keeps the shortest prefix reaching p for top-p", () => {
    const p = (topP: number) => ofProbs({ temperature: 1, topK: 0, topP });
    expect(p(0.35)).toEqual({ ids: [3], probs: [1] }); // 0.4 ≥ 0.35
    expect(p(0.5).ids).toEqual([3, 2]); // 0.4 < 0.5 ≤ 0.7
    const three = p(0.75); // 0.7 < 0.75 ≤ 0.9 → {0.4, 0.3, 0.2} / 0.9
    expect(three.ids).toEqual([3, 2, 1]);
    expect(three.probs[2]).toBeCloseTo(2 / 9, 12);
  });

  it("applies top-p to the top-k distribution", () => {
    // top-3 renormalised: 4/9, 3/9, 2/9; cumulative 0.444 < 0.6 ≤ 0.777 → keep 2 → 4/7, 3/7.
    const d = ofProbs({ temperature: 1, topK: 3, topP: 0.6 });
    expect(d.ids).toEqual([3, 2]);
    expect(d.probs[0]).toBeCloseTo(4 / 7, 12);
  });

  it("breaks ties by the lower id, for greedy and for top-k", () => {
    const tied = [1, 5, 5, 0];
    expect(exact(samplingDistribution(tied, { temperature: 0, topK: 0, topP: 1 }))).toEqual({
      ids: [1],
      probs: [1],
    });
    expect(exact(samplingDistribution(tied, { temperature: 1, topK: 1, topP: 1 })).ids).toEqual([1]);
  });

  it("refuses bad parameters and NaN logits", () => {
    expect(() => samplingDistribution(LOGITS, { temperature: -1, topK: 0, topP: 1 })).toThrow("temperature");
    expect(() => samplingDistribution(LOGITS, { temperature: 1, topK: 1.5, topP: 1 })).toThrow("topK");
    expect(() => samplingDistribution(LOGITS, { temperature: 1, topK: 0, topP: 0 })).toThrow("topP");
    expect(() => samplingDistribution([0, Number.NaN], { temperature: 1, topK: 0, topP: 1 })).toThrow(
      "logit 1 is NaN",
    );
    expect(() => samplingDistribution([0, Number.NaN], { temperature: 0, topK: 0, topP: 1 })).toThrow(
      "NaN at index 1",
    );
  });
});

describe("sampleToken", () => {
  it("is greedy with logprob 0 at temperature 0 and draws nothing", () => {
    const rng = new Rng(1);
    expect(sampleToken(LOGITS, { temperature: 0, topK: 0, topP: 1 }, rng)).toEqual({
      tokenId: 3,
      logprob: 0,
    });
    expect(rng.float()).toBe(new Rng(1).float());
  });

  it("draws from the full distribution exactly as the inverse CDF over samplingDistribution (property)", () => {
    // The full-distribution path never builds the distribution; it must give the same token and
    // the same logprob, bit for bit, as drawing over samplingDistribution's probabilities in id order.
    const viaDistribution = (logits: Float32Array, temperature: number, rng: Rng) =>
      drawFrom(samplingDistribution(logits, { temperature, topK: 0, topP: 1 }), rng.float());
    fc.assert(
      fc.property(
        fc.array(fc.float({ min: -30, max: 30, noNaN: true }), { minLength: 1, maxLength: 600 }),
        fc.double({ min: 0.05, max: 4, noNaN: true }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (values, temperature, seed) => {
          const logits = Float32Array.from(values);
          const params = { temperature, topK: 0, topP: 1 };
          expect(sampleToken(logits, params, new Rng(seed))).toEqual(
            viaDistribution(logits, temperature, new Rng(seed)),
          );
        },
      ),
      { numRuns: 300 },
    );
    // The leftover rule: u at the top of [0, 1) can pass Σq (ten q of 0.1 sum to 1 − 2⁻⁵³); the draw
    // then falls to the last id whose probability is not 0, never to the underflowed tail.
    const top = { float: () => 1 - 2 ** -53 } as unknown as Rng;
    const tail = Float32Array.from([...Array(10).fill(0), -1e4, -1e4]);
    const drawn = sampleToken(tail, { temperature: 1, topK: 0, topP: 1 }, top);
    expect(drawn).toEqual(viaDistribution(tail, 1, top));
    expect(drawn.tokenId).toBe(9);
    expect(drawn.logprob).toBeCloseTo(Math.log(0.1), 12);
    expect(() =>
      sampleToken(Float32Array.of(0, Number.NaN), { temperature: 1, topK: 0, topP: 1 }, new Rng(1)),
    ).toThrow("logit 1 is NaN");
  });

  it("inverts the CDF of one uniform draw, with log q as logprob", () => {
    const params = { temperature: 1, topK: 3, topP: 1 }; // ids [3, 2, 1] with q = 4/9, 3/9, 2/9
    for (let seed = 0; seed < 20; seed++) {
      const u = new Rng(seed).float();
      const expected = u < 4 / 9 ? 3 : u < 7 / 9 ? 2 : 1;
      const q = { 3: 4 / 9, 2: 3 / 9, 1: 2 / 9 }[expected]!;
      const got = sampleToken(Float64Array.from(PROBS.map(Math.log)), params, new Rng(seed));
      expect(got.tokenId).toBe(expected);
      expect(got.logprob).toBeCloseTo(Math.log(q), 12);
    }
  });

  it("samples with the frequencies of the distribution (chi-square, fixed seed)", () => {
    const logits = Float64Array.from(PROBS.map(Math.log));
    const cases = [
      { params: { temperature: 1, topK: 0, topP: 1 }, expected: [0.1, 0.2, 0.3, 0.4] },
      { params: { temperature: 1, topK: 3, topP: 1 }, expected: [0, 2 / 9, 3 / 9, 4 / 9] },
      {
        params: { temperature: 0.5, topK: 0, topP: 0.9 },
        expected: [0, 0.04 / 0.29, 0.09 / 0.29, 0.16 / 0.29],
      },
    ];
    const N = 20000;
    for (const { params, expected } of cases) {
      const counts = [0, 0, 0, 0];
      const rng = new Rng(12345);
      for (let i = 0; i < N; i++) counts[sampleToken(logits, params, rng).tokenId]! += 1;
      let chi2 = 0;
      let dof = -1;
      expected.forEach((p, i) => {
        if (p === 0) {
          expect(counts[i]).toBe(0); // filtered tokens never appear
          return;
        }
        chi2 += (counts[i]! - N * p) ** 2 / (N * p);
        dof += 1;
      });
      // 99.9% quantiles of χ²: dof 2 → 13.82, dof 3 → 16.27.
      expect(chi2).toBeLessThan(dof === 2 ? 13.82 : 16.27);
    }
  });

  it("returns a logprob ≤ 0 that matches the distribution it drew from (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -20, max: 20, noNaN: true }), { minLength: 1, maxLength: 40 }),
        fc.double({ min: 0.05, max: 3, noNaN: true }),
        fc.integer({ min: 0, max: 10 }),
        fc.double({ min: 0.05, max: 1, noNaN: true }),
        fc.integer(),
        (logits, temperature, topK, topP, seed) => {
          const params = { temperature, topK, topP };
          const dist = samplingDistribution(logits, params);
          const total = dist.probs.reduce((a, b) => a + b, 0);
          expect(total).toBeCloseTo(1, 10);
          if (topK > 0) expect(dist.tokenIds.length).toBeLessThanOrEqual(topK);
          const { tokenId, logprob } = sampleToken(logits, params, new Rng(seed));
          expect(logprob).toBeLessThanOrEqual(0);
          const at = Array.from(dist.tokenIds).indexOf(tokenId);
          expect(at).toBeGreaterThanOrEqual(0);
          expect(logprob).toBeCloseTo(Math.log(dist.probs[at]!), 10);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("entropy", () => {
  it("is log V for uniform logits and 0 for a point mass", () => {
    expect(entropy([3, 3, 3, 3])).toBeCloseTo(Math.log(4), 14);
    expect(entropy([0, -1e4])).toBeCloseTo(0, 10);
    // H([0.1,0.2,0.3,0.4]) = −Σ p log p
    expect(entropy(LOGITS)).toBeCloseTo(-PROBS.reduce((h, p) => h + p * Math.log(p), 0), 6);
  });
});
