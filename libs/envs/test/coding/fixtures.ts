import type { Task } from "@troupe/core";
import type { CodingProblem, FeedbackContext, TestReport } from "../../src/coding/index.ts";

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

/** `doubleSum` as a test-split task, the one the two-agent environments are stepped on. */
export const doubleSumTask: Task<CodingProblem> = { id: doubleSum.taskId, split: "test", payload: doubleSum };

export const py = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

/** What a feedback source sees after main's wrong `double_sum` ran with `report`. */
export const feedbackContext = (report: TestReport): FeedbackContext => ({
  problem: doubleSum,
  agent: "main",
  responsibility: "the main function `double_sum`",
  code: "def double_sum(xs):\n    return 1",
  program: "program text",
  report,
  turn: 0,
});
