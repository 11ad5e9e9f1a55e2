import { describe, expect, it } from "vitest";
import { extractCode } from "../../src/coding/extract.ts";

// [model text, the code extracted from it]
const pythonCases: [string, string][] = [
  ["Sure:\n```python\ndef f():\n    return 1\n```\nDone.", "def f():\n    return 1"],
  ["```py\na = 1\n```\n```\nb = 2\n```", "a = 1\n\nb = 2"],
  ["```python\ndef f():\n    return 1", "def f():\n    return 1"],
  ["  x = 1  ", "x = 1"],
  ["```bash\nls\n```", ""],
];

const bashCases: [string, string][] = [
  ["```bash\nls\n```\n```python\nx = 1\n```", "ls"],
  ["```\necho hi\n```", "echo hi"],
  ["```python\nx = 1\n```", ""],
  // `py` is python's alias only.
  ["```py\nx = 1\n```", ""],
];

describe("extractCode", () => {
  it.each(pythonCases)("takes fenced python blocks, or the raw text: %j → %j", (text, code) => {
    expect(extractCode(text)).toBe(code);
  });
});

describe("extractCode for another language", () => {
  it.each(bashCases)("keeps that language's blocks (and untagged ones): %j → %j", (text, code) => {
    expect(extractCode(text, "bash")).toBe(code);
  });
});
