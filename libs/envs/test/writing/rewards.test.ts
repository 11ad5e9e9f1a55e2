import { describe, expect, it } from "vitest";
import { bandScore, WRITING_REWARD_TIERS, writingReward } from "../../src/writing/index.ts";

const tldr = WRITING_REWARD_TIERS.tldr;
const arxiv = WRITING_REWARD_TIERS.arxiv;
// 8 tokens, 45 characters, 8 unique words, no stopwords.
const A = "alpha beta gamma delta epsilon zeta eta theta";

describe("writing reward tiers", () => {
  it("keeps the table in one constant", () => {
    expect(tldr.tokens).toEqual({ min: 8, max: 256 });
    expect(tldr.lengthRatio).toEqual({ acceptLow: 1.1, optimalLow: 1.6, optimalHigh: 3.2, acceptHigh: 5.0 });
    expect([tldr.uniqueWordRatio.acceptLow, tldr.uniqueWordRatio.optimalLow]).toEqual([1.3, 2.0]);
    expect(arxiv.tokens).toEqual({ min: 128, max: 256 });
    expect(arxiv.uniqueWordRatio).toEqual({
      acceptLow: 0.5,
      optimalLow: 0.7,
      optimalHigh: 1.3,
      acceptHigh: 1.7,
    });
    expect([tldr.jaccardCap, arxiv.jaccardCap]).toEqual([0.03, 0.23]);
    expect([tldr.structureReward, tldr.coordinationReward, tldr.vocabularyReward, tldr.styleReward]).toEqual([
      0.5, 1, 0.5, 1,
    ]);
  });

  it("band scoring: full, ramps, and stop", () => {
    const band = tldr.lengthRatio;
    expect(bandScore(2, band)).toBe(1);
    expect(bandScore(1.35, band)).toBeCloseTo(0.5, 12);
    expect(bandScore(4.1, band)).toBeCloseTo(0.5, 12);
    expect(bandScore(1.1, band)).toBe(0); // at the edge: 0 but the count goes on
    expect(bandScore(1.09, band)).toBeNull();
    expect(bandScore(5.01, band)).toBeNull();
  });

  it("TLDR, every tier reached", () => {
    // B: 18 tokens, 91 chars (ratio 91/45 ≈ 2.02 → 1.0), 18 unique words (18/8 = 2.25 → 0.5),
    // transitions: "however" (1 category → 0.4), Jaccard {alpha}/25 = 0.04 ≥ cap 0.03 → 1.
    const B = "alpha iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega however";
    const r = writingReward(A, B, tldr);
    expect(r.measures).toMatchObject({
      tokensA: 8,
      tokensB: 18,
      lengthRatio: 91 / 45,
      uniqueWordRatio: 18 / 8,
      jaccard: 1 / 25,
    });
    expect(r.measures.transitionCategories).toEqual(["contrast"]);
    expect([r.structure, r.coordination, r.vocabulary]).toEqual([0.5, 1, 0.5]);
    expect(r.style).toBeCloseTo(0.4 * 0.4 + 0.6 * 1, 12);
    expect(r.total).toBeCloseTo(2.76, 12);
    expect(r.stoppedAt).toBeUndefined();
  });

  it("TLDR, two transition categories", () => {
    // 17 tokens, 97 chars (→ 1.0), 17 unique words (→ 0.5), "moreover" + "for example" → 0.45,
    // Jaccard 8/16 → capped → 1. Style 0.4·0.45 + 0.6 = 0.78.
    const B =
      "Moreover, alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu. For example, nu xi.";
    const r = writingReward(A, B, tldr);
    expect(r.measures.transitionCategories).toEqual(["elaboration", "examples"]);
    expect(r.total).toBeCloseTo(0.5 + 1 + 0.5 + 0.78, 12);
  });

  it("TLDR, partial coordination and vocabulary", () => {
    // 63 chars → ratio 1.4 → (1.4−1.1)/0.5 = 0.6; 11 unique → 11/8 = 1.375 → 0.5·(0.075/0.7);
    // no transitions → 0; Jaccard 8/11 → capped → 0.6.
    const B = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda";
    const r = writingReward(A, B, tldr);
    expect(r.coordination).toBeCloseTo(0.6, 12);
    expect(r.vocabulary).toBeCloseTo((0.5 * 0.075) / 0.7, 12);
    expect(r.style).toBeCloseTo(0.6, 12);
    expect(r.total).toBeCloseTo(0.5 + 0.6 + (0.5 * 0.075) / 0.7 + 0.6, 12);
  });

  it("TLDR, stops: structure, coordination, vocabulary", () => {
    expect(writingReward("too short", A, tldr)).toMatchObject({ total: 0, stoppedAt: "structure" });
    expect(writingReward(A, A, tldr)).toMatchObject({ total: 0.5, stoppedAt: "coordination" });
    // Same words twice: ratio 91/45 is fine but 8/8 unique words < 1.3 stops.
    expect(writingReward(A, `${A} ${A}`, tldr)).toMatchObject({ total: 1.5, stoppedAt: "vocabulary" });
  });

  it("arXiv, generated texts with hand-counted measures", () => {
    // A: alpha0..alpha129: 130 tokens; chars 10·6 + 90·7 + 30·8 + 129 spaces = 1059.
    const a = Array.from({ length: 130 }, (_, i) => `alpha${i}`).join(" ");
    // B: alpha0..alpha29, beta0..beta99, "however": 131 tokens; chars 200 + 590 + 7 + 130 = 927.
    const b = [
      ...Array.from({ length: 30 }, (_, i) => `alpha${i}`),
      ...Array.from({ length: 100 }, (_, i) => `beta${i}`),
      "however",
    ].join(" ");
    expect([a.length, b.length]).toEqual([1059, 927]);
    const r = writingReward(a, b, arxiv);
    const coordination = (927 / 1059 - 0.8) / 0.5;
    const j = 30 / 231; // shared 30; union 130 + 131 − 30
    expect(r.measures.jaccard).toBeCloseTo(j, 12);
    expect(r.coordination).toBeCloseTo(coordination, 12);
    expect(r.vocabulary).toBe(0.5); // 131/130 ∈ [0.7, 1.3]
    expect(r.style).toBeCloseTo(0.4 * 0.4 + (0.6 * j) / 0.23, 12);
    expect(r.total).toBeCloseTo(0.5 + coordination + 0.5 + 0.16 + (0.6 * j) / 0.23, 12);
    // Too short for arXiv's 128-token floor.
    expect(writingReward(A, A, arxiv)).toMatchObject({ total: 0, stoppedAt: "structure" });
  });
});
