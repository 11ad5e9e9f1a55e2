/**
 * CoMLRL's tiered writing rewards (OpenMLRL/LLM_Collab_Writing, `tldr_combined_reward` and
 * `arxiv_combined_reward`) for two agents writing complementary texts A (first agent) and B
 * (second agent). Tiers are checked in order; a tier whose value falls outside its accepted band
 * stops the count. THESE ARE PROXY REWARDS: they measure lengths and word statistics, not quality,
 * and a policy can game them (padding, rare-word salad, sprinkling transition words).
 *
 * | tier | measure                                                    | TLDR (concise A, detailed B) | arXiv (background A, methods B) | reward   |
 * |------|------------------------------------------------------------|------------------------------|---------------------------------|----------|
 * | 1    | whitespace tokens of A and of B both in [min, max]         | [8, 256], else stop          | [128, 256], else stop           | 0.5      |
 * | 2    | length ratio chars(B)/chars(A): band (accept, optimal)     | 1.1 ┤1.6 – 3.2├ 5.0          | 0.8 ┤1.3 – 1.6├ 2.0             | 0 … 1.0  |
 * | 3    | unique-word ratio uniq(B)/uniq(A): band                    | 1.3 ┤2.0 – ∞                 | 0.5 ┤0.7 – 1.3├ 1.7             | 0 … 0.5  |
 * | 4    | 0.4 · transition score + 0.6 · min(J, cap)/cap             | transitions in B, cap 0.03   | transitions in A and B, cap 0.23 | 0 … 1.0  |
 *
 * Band scoring: full reward inside [optimalLow, optimalHigh], a linear ramp down to 0 at the
 * accept edges, and outside [acceptLow, acceptHigh] the tier scores 0 and the count stops.
 * Transition score: 0 with no category, else 0.4 + 0.05 per category beyond the first (capped at
 * 1; 12 categories → 0.95). J = Jaccard overlap of the stopword-free word sets of A and B.
 * Maximum total 2.98 (tier 4 tops out at 0.4 · 0.95 + 0.6).
 */
import { countTokens, jaccard, transitionCategories, uniqueWordCount } from "./text-stats.ts";

export interface Band {
  readonly acceptLow: number;
  readonly optimalLow: number;
  readonly optimalHigh: number;
  readonly acceptHigh: number;
}

export interface WritingRewardConfig {
  readonly tokens: { readonly min: number; readonly max: number };
  readonly structureReward: number;
  readonly lengthRatio: Band;
  readonly coordinationReward: number;
  readonly uniqueWordRatio: Band;
  readonly vocabularyReward: number;
  readonly styleReward: number;
  readonly transitionWeight: number;
  readonly jaccardWeight: number;
  readonly transitionBase: number;
  readonly transitionPerExtraCategory: number;
  readonly jaccardCap: number;
  /** Where transition words are counted: in B only (TLDR) or in A and B together (arXiv). */
  readonly transitionsIn: "second" | "both";
}

const shared = {
  structureReward: 0.5,
  coordinationReward: 1.0,
  vocabularyReward: 0.5,
  styleReward: 1.0,
  transitionWeight: 0.4,
  jaccardWeight: 0.6,
  transitionBase: 0.4,
  transitionPerExtraCategory: 0.05,
} as const;

export const WRITING_REWARD_TIERS = {
  tldr: {
    ...shared,
    tokens: { min: 8, max: 256 },
    lengthRatio: { acceptLow: 1.1, optimalLow: 1.6, optimalHigh: 3.2, acceptHigh: 5.0 },
    uniqueWordRatio: {
      acceptLow: 1.3,
      optimalLow: 2.0,
      optimalHigh: Number.POSITIVE_INFINITY,
      acceptHigh: Number.POSITIVE_INFINITY,
    },
    jaccardCap: 0.03,
    transitionsIn: "second",
  },
  arxiv: {
    ...shared,
    tokens: { min: 128, max: 256 },
    lengthRatio: { acceptLow: 0.8, optimalLow: 1.3, optimalHigh: 1.6, acceptHigh: 2.0 },
    uniqueWordRatio: { acceptLow: 0.5, optimalLow: 0.7, optimalHigh: 1.3, acceptHigh: 1.7 },
    jaccardCap: 0.23,
    transitionsIn: "both",
  },
} as const satisfies Record<string, WritingRewardConfig>;

/** Fraction of a tier's reward for value r, or null when r is outside the accepted band (stop). */
export function bandScore(r: number, band: Band): number | null {
  if (!Number.isFinite(r)) return null;
  if (r >= band.optimalLow && r <= band.optimalHigh) return 1;
  if (r >= band.acceptLow && r < band.optimalLow)
    return (r - band.acceptLow) / (band.optimalLow - band.acceptLow);
  if (r > band.optimalHigh && r <= band.acceptHigh)
    return 1 - (r - band.optimalHigh) / (band.acceptHigh - band.optimalHigh);
  return null;
}

export interface WritingRewardBreakdown {
  readonly structure: number;
  readonly coordination: number;
  readonly vocabulary: number;
  readonly style: number;
  readonly total: number;
  readonly stoppedAt?: "structure" | "coordination" | "vocabulary";
  readonly measures: {
    readonly tokensA: number;
    readonly tokensB: number;
    readonly lengthRatio?: number;
    readonly uniqueWordRatio?: number;
    readonly transitionCategories?: readonly string[];
    readonly jaccard?: number;
  };
}

export function writingReward(a: string, b: string, config: WritingRewardConfig): WritingRewardBreakdown {
  const tokensA = countTokens(a);
  const tokensB = countTokens(b);
  const measures: {
    -readonly [K in keyof WritingRewardBreakdown["measures"]]: WritingRewardBreakdown["measures"][K];
  } = {
    tokensA,
    tokensB,
  };
  const parts = { structure: 0, coordination: 0, vocabulary: 0, style: 0 };
  const result = (stoppedAt?: WritingRewardBreakdown["stoppedAt"]): WritingRewardBreakdown => ({
    ...parts,
    total: parts.structure + parts.coordination + parts.vocabulary + parts.style,
    ...(stoppedAt ? { stoppedAt } : {}),
    measures,
  });
  const inBounds = (n: number) => n >= config.tokens.min && n <= config.tokens.max;
  if (!(inBounds(tokensA) && inBounds(tokensB))) return result("structure");
  parts.structure = config.structureReward;

  measures.lengthRatio = b.length / a.length;
  const coordination = bandScore(measures.lengthRatio, config.lengthRatio);
  if (coordination === null) return result("coordination");
  parts.coordination = config.coordinationReward * coordination;

  const uniqueA = uniqueWordCount(a);
  measures.uniqueWordRatio = uniqueA > 0 ? uniqueWordCount(b) / uniqueA : 0;
  const vocabulary = uniqueA > 0 ? bandScore(measures.uniqueWordRatio, config.uniqueWordRatio) : null;
  if (vocabulary === null) return result("vocabulary");
  parts.vocabulary = config.vocabularyReward * vocabulary;

  const categories = transitionCategories(config.transitionsIn === "second" ? b : `${a}\n${b}`);
  measures.transitionCategories = categories;
  const transitionScore =
    categories.length === 0
      ? 0
      : Math.min(1, config.transitionBase + config.transitionPerExtraCategory * (categories.length - 1));
  measures.jaccard = jaccard(a, b);
  const jaccardScore = Math.min(measures.jaccard, config.jaccardCap) / config.jaccardCap;
  parts.style =
    config.styleReward * (config.transitionWeight * transitionScore + config.jaccardWeight * jaccardScore);
  return result();
}
