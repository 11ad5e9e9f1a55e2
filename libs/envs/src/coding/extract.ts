/**
 * Getting code out of a model's text: the contents of its fenced code blocks (```python … ```),
 * joined, or the whole text when it has none. An unterminated final fence (the model ran out of
 * tokens) still counts as a block.
 */
const FENCE = /```[ \t]*([\w+-]*)[^\n]*\n([\s\S]*?)(?:```|$(?![\s\S]))/g;

export function extractCode(text: string, language = "python"): string {
  const blocks: string[] = [];
  const others: string[] = [];
  for (const m of text.matchAll(FENCE)) {
    const lang = m[1]!.toLowerCase();
    if (lang === "" || lang === language || (language === "python" && lang === "py")) blocks.push(m[2]!);
    else others.push(m[2]!);
  }
  if (blocks.length > 0) return blocks.map((b) => b.replace(/\s+$/, "")).join("\n\n");
  if (others.length > 0) return "";
  return text.trim();
}
