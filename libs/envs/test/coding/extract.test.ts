import { describe, expect, it } from "vitest";
import { extractCode } from "../../src/coding/extract.ts";

describe("extractCode", () => {
  it("takes fenced python blocks, or the raw text", () => {
    expect(extractCode("Sure:\n```python\ndef f():\n    return 1\n```\nDone.")).toBe(
      "def f():\n    return 1",
    );
    expect(extractCode("```py\na = 1\n```\n```\nb = 2\n```")).toBe("a = 1\n\nb = 2");
    expect(extractCode("```python\ndef f():\n    return 1")).toBe("def f():\n    return 1");
    expect(extractCode("  x = 1  ")).toBe("x = 1");
    expect(extractCode("```bash\nls\n```")).toBe("");
  });
});

describe("extractCode for another language", () => {
  it("keeps that language's blocks (and untagged ones); python's are then the others", () => {
    expect(extractCode("```bash\nls\n```\n```python\nx = 1\n```", "bash")).toBe("ls");
    expect(extractCode("```\necho hi\n```", "bash")).toBe("echo hi");
    expect(extractCode("```python\nx = 1\n```", "bash")).toBe("");
    // `py` is python's alias only.
    expect(extractCode("```py\nx = 1\n```", "bash")).toBe("");
  });
});
