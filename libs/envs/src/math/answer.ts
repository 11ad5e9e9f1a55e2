/**
 * Final answers of math solutions: where to find them in a text and how to read them as numbers.
 *
 * Extraction, in order of preference:
 *   1. the last `\boxed{…}` (braces balanced, so `\boxed{\frac{3}{4}}` works);
 *   2. the last `#### …` line (GSM8K's format);
 *   3. the last number in the text.
 * Normalisation: drop `$`, `\$`, `%`, thousands commas, `\text{…}` wrappers, LaTeX spacing, unit
 * words ("12 dollars", "3 apples"), a trailing period; read `\frac{a}{b}`, `a/b`, mixed numbers
 * `1 1/2`, decimals and `3.0`. Two answers match when they differ by at most 1e-6 relative.
 */

export type AnswerSource = "boxed" | "hashes" | "last-number";

export interface ExtractedAnswer {
  /** The answer text as written. */
  readonly raw: string;
  /** Its numeric value, or null when it is not a number. */
  readonly value: number | null;
  readonly source: AnswerSource;
}

/** Contents of the last `\boxed{…}` (or `\fbox{…}`), braces balanced; null if none is closed. */
export function lastBoxed(text: string): string | null {
  const starts = [...text.matchAll(/\\(?:boxed|fbox)\s*\{/g)];
  for (let s = starts.length - 1; s >= 0; s--) {
    const open = starts[s]!.index! + starts[s]![0].length;
    let depth = 1;
    for (let i = open; i < text.length; i++) {
      if (text[i] === "{") depth++;
      else if (text[i] === "}" && --depth === 0) return text.slice(open, i);
    }
  }
  return null;
}

const NUMBER = /-?\d[\d,]*(?:\.\d+)?(?:\s*\/\s*\d+(?:\.\d+)?)?|-?\.\d+/g;

export function extractAnswer(text: string): ExtractedAnswer | null {
  const boxed = lastBoxed(text);
  if (boxed !== null) return { raw: boxed, value: parseNumber(boxed), source: "boxed" };
  const hashes = [...text.matchAll(/####\s*([^\n]*)/g)].at(-1);
  if (hashes && hashes[1]!.trim() !== "")
    return { raw: hashes[1]!.trim(), value: parseNumber(hashes[1]!), source: "hashes" };
  const numbers = [...text.replace(/\u2212/g, "-").matchAll(NUMBER)];
  const last = numbers.at(-1);
  if (!last) return null;
  return { raw: last[0], value: parseNumber(last[0]), source: "last-number" };
}

/** Reads an answer string as a number, or null. */
export function parseNumber(raw: string): number | null {
  let s = raw
    .replace(/\u2212/g, "-")
    .replace(/\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}/g, "$1")
    .replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)")
    .replace(/\\[,!;: ]/g, "")
    .replace(/\\\$|\$|\\%|%|\\left|\\right/g, "")
    .replace(/(\d),(?=\d{3}\b)/g, "$1")
    .replace(/[a-zA-Z]+\.?/g, " ") // unit words ("dollars", "cm", "apples")
    .trim()
    .replace(/\.$/, "")
    .replace(/\s+/g, " ")
    .trim();
  // Parenthesised fraction from \frac: (a)/(b)
  s = s.replace(/^\((-?[\d.]+)\)\/\((-?[\d.]+)\)$/, "$1/$2");
  const mixed = /^(-?)(\d+) (\d+)\s*\/\s*(\d+)$/.exec(s);
  if (mixed) {
    const sign = mixed[1] === "-" ? -1 : 1;
    return sign * (Number(mixed[2]) + Number(mixed[3]) / Number(mixed[4]));
  }
  const fraction = /^(-?\d+(?:\.\d+)?)\s*\/\s*(-?\d+(?:\.\d+)?)$/.exec(s);
  if (fraction) {
    const den = Number(fraction[2]);
    return den === 0 ? null : Number(fraction[1]) / den;
  }
  if (/^-?(?:\d+(?:\.\d*)?|\.\d+)$/.test(s)) return Number(s);
  return null;
}

/** Relative tolerance of `answersMatch`. */
export const ANSWER_RELATIVE_TOLERANCE = 1e-6;

export function answersMatch(a: number | null, b: number | null): boolean {
  if (a === null || b === null) return false;
  return Math.abs(a - b) <= ANSWER_RELATIVE_TOLERANCE * Math.max(1, Math.abs(b));
}

/**
 * The numbers of a question in the order they appear, as a Python list literal's items would read
 * them: digits with optional thousands commas and decimals ("1,200" → 1200, "2.5" → 2.5), no signs
 * (a word problem's "-" is a hyphen). What the tool agent's program finds in `N` (toolInputs).
 */
export function questionNumbers(question: string): number[] {
  return [...question.matchAll(/\d+(?:,\d{3})*(?:\.\d+)?/g)].map((m) => Number(m[0].replace(/,/g, "")));
}
