/** The registered `math` environment: the answer it renders. */
import { createSandbox } from "@troupe/sandbox";
import { describe, expect, test } from "vitest";
import { createEnvironment, type MathAnswer, renderAnswer } from "../../src/index.ts";

const sandbox = await createSandbox();

describe("the math answer", () => {
  test("math: the agreed answer, each agent's, and the tool's program and output", async () => {
    const math = createEnvironment("math", { runner: sandbox });
    const task = {
      id: "q",
      split: "test" as const,
      payload: { id: "q", question: "What is 6 times 7?", answer: 42 },
    };
    const state = await math.env.reset(task, 0);
    const result = await math.env.step(state, {
      reasoner: "6 * 7 = 42, so \\boxed{42}",
      tool: "```python\nprint('work')\nprint(6 * 7)\n```",
    });
    expect([result.teamReward, result.done, result.success]).toEqual([1, true, true]);
    expect(renderAnswer("math", result.state, [])).toEqual({
      kind: "math",
      answer: 42,
      agree: true,
      reasoner: 42,
      tool: { answer: 42, program: "print('work')\nprint(6 * 7)", output: "work\n42\n", status: "ok" },
      turns: 1,
    } satisfies MathAnswer);
  });
});
