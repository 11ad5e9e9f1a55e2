/** The lexical statistics behind the writing rewards. */
import { expect, it } from "vitest";
import {
  contentWordSet,
  countTokens,
  jaccard,
  STOPWORDS,
  TRANSITION_CATEGORIES,
  transitionCategories,
  uniqueWordCount,
  words,
} from "../../src/writing/text-stats.ts";

it("tokens by whitespace; words as Python's \\w+, lower-cased, Unicode letters and digits included", () => {
  expect(countTokens("")).toBe(0);
  expect(countTokens("   \n\t ")).toBe(0);
  expect(countTokens("  one, two\n\tthree-four  ")).toBe(3);
  expect(words("Hello, wörld! It's 42_x über-Ärger")).toEqual([
    "hello",
    "wörld",
    "it",
    "s",
    "42_x",
    "über",
    "ärger",
  ]);
  expect(words("... --- !!!")).toEqual([]);
  expect(uniqueWordCount("The cat saw THE cat.")).toBe(3);
});

it("content words leave out the stopwords", () => {
  expect([...contentWordSet("The cat and THE dog were here, with a bird")]).toEqual(["cat", "dog", "bird"]);
  for (const w of ["the", "and", "were", "here", "with", "a"]) expect(STOPWORDS.has(w)).toBe(true);
  expect(jaccard("cat dog", "cat dog")).toBe(1);
  expect(jaccard("cat", "dog")).toBe(0);
});

it("twelve transition categories (CoMLRL's), each phrase found in its category", () => {
  expect(Object.keys(TRANSITION_CATEGORIES)).toHaveLength(12);
  for (const [category, phrases] of Object.entries(TRANSITION_CATEGORIES))
    for (const phrase of phrases)
      expect(transitionCategories(`It rained. ${phrase.toUpperCase()}, we left.`)).toContain(category);
});

it("matches transition phrases as whole words only; Jaccard ignores stopwords", () => {
  expect(transitionCategories("Thenceforth the unlessy firstly")).toEqual([]);
  expect(transitionCategories("First we ate; however, in short, it rained.")).toEqual([
    "contrast",
    "sequence",
    "summary",
  ]);
  expect(jaccard("the cat and the dog", "a cat with a bird")).toBeCloseTo(1 / 3, 12);
  expect(jaccard("the a", "of to")).toBe(1);
});
