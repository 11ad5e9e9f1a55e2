/**
 * Lexical statistics behind the writing rewards: whitespace tokens, words (Unicode letters,
 * digits and `_`, like Python's `\w+`), unique words, a stopword-free word set, Jaccard overlap,
 * and transition-word categories. The stopword and transition lists are our own compact lists of
 * common English words, grouped into CoMLRL's twelve categories.
 */

/** Tokens by whitespace (CoMLRL's length measure). */
export function countTokens(text: string): number {
  const t = text.trim();
  return t === "" ? 0 : t.split(/\s+/).length;
}

/** Lower-cased words. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
}

export function uniqueWordCount(text: string): number {
  return new Set(words(text)).size;
}

// biome-ignore format: a word list reads best as a block
export const STOPWORDS: ReadonlySet<string> = new Set([
  "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been",
  "before", "being", "both", "but", "by", "can", "could", "did", "do", "does", "each", "for", "from", "had",
  "has", "have", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just",
  "me", "more", "most", "my", "no", "not", "now", "of", "on", "only", "or", "other", "our", "out", "over", "she",
  "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those",
  "to", "too", "up", "us", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "why",
  "will", "with", "would", "you", "your",
]);

export function contentWordSet(text: string): Set<string> {
  return new Set(words(text).filter((w) => !STOPWORDS.has(w)));
}

/** |A ∩ B| / |A ∪ B| over stopword-free word sets; 1 when both are empty. */
export function jaccard(a: string, b: string): number {
  const A = contentWordSet(a);
  const B = contentWordSet(b);
  if (A.size === 0 && B.size === 0) return 1;
  let inter = 0;
  for (const w of A) if (B.has(w)) inter++;
  return inter / (A.size + B.size - inter);
}

// biome-ignore format: a word list reads best as a block
export const TRANSITION_CATEGORIES: Readonly<Record<string, readonly string[]>> = {
  elaboration: ["furthermore", "moreover", "additionally", "in addition", "besides", "as well as", "likewise"],
  examples: ["for example", "for instance", "such as", "in particular", "specifically", "namely", "notably"],
  explanation: ["in other words", "that is", "to clarify", "put simply", "essentially", "in fact"],
  cause_effect: ["therefore", "thus", "consequently", "as a result", "hence", "because of this", "accordingly"],
  contrast: ["however", "nevertheless", "nonetheless", "on the other hand", "in contrast", "whereas", "instead"],
  sequence: ["first", "second", "next", "then", "finally", "afterwards", "subsequently", "to begin with"],
  emphasis: ["indeed", "certainly", "clearly", "above all", "undoubtedly", "importantly"],
  summary: ["in summary", "in conclusion", "overall", "to sum up", "in short", "in brief"],
  comparison: ["similarly", "in the same way", "compared with", "by comparison", "just as"],
  concession: ["although", "even though", "despite", "admittedly", "granted", "even so"],
  condition: ["unless", "provided that", "as long as", "in case", "otherwise", "even if"],
  time: ["meanwhile", "eventually", "previously", "until", "recently", "currently", "since then"],
};

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const CATEGORY_PATTERNS = Object.entries(TRANSITION_CATEGORIES).map(
  ([category, list]) =>
    [
      category,
      new RegExp(`(?<![\\p{L}\\p{N}_])(?:${list.map(escapeRegExp).join("|")})(?![\\p{L}\\p{N}_])`, "iu"),
    ] as const,
);

/**
 * Categories with at least one transition phrase in the text, matched as whole words. (CoMLRL
 * matches substrings, so "so" is found inside "also"; whole-word matching removes those false hits.)
 */
export function transitionCategories(text: string): string[] {
  return CATEGORY_PATTERNS.filter(([, re]) => re.test(text)).map(([c]) => c);
}
