import type { CodingProblem } from "../../src/coding/index.ts";

/** A hand-made problem with three counted asserts (`assert True` is not a test) and one setup line. */
export const doubleSum: CodingProblem = {
  taskId: "Crafted/double_sum",
  prompt: 'def double_sum(xs):\n    """Return twice the sum of xs."""\n',
  canonicalSolution: "    return 2 * sum(xs)\n",
  test: [
    "METADATA = {}",
    "",
    "def check(candidate):",
    "    zero = []",
    "    assert candidate(zero) == 0",
    "    assert candidate([1, 2]) == 6",
    "    assert candidate([5]) == 10",
    "    assert True",
    "",
  ].join("\n"),
  entryPoint: "double_sum",
};

export const py = (code: string) => `\`\`\`python\n${code}\n\`\`\``;
