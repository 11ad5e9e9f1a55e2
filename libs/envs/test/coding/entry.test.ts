/** The registered `coding` environment: the reward through it, and the answer it renders. */
import { createSandbox } from "@troupe/sandbox";
import { describe, expect, test } from "vitest";
import { type CodeAnswer, createEnvironment } from "../../src/index.ts";

const sandbox = await createSandbox();

describe("the coding reward through the registered environment", () => {
  const prime = "```python\ndef aux(n):\n    return n > 1 and all(n % i for i in range(2, n))\n```";
  const run = async (main: string) => {
    const coding = createEnvironment("coding", { runner: sandbox, maxTurns: 1 });
    const [task] = coding.generateTasks("test", 1, 0); // CoopHumanEval/0: x_or_y
    const state = await coding.env.reset(task!, 0);
    const result = await coding.env.step(state, { helper: prime, main: `\`\`\`python\n${main}\n\`\`\`` });
    return { result, answer: coding.render(result.state, []) as CodeAnswer };
  };

  test("an honest solution: 5/5 tests, tiers 0.4 + 0.6 + 0.5 + 1 + 0.5 + 1", async () => {
    const { result, answer } = await run(
      "def x_or_y(n, x, y):\n    if aux(n):\n        return x\n    return y",
    );
    expect([result.teamReward, result.success]).toEqual([4, true]);
    expect(answer.tests).toMatchObject({ passed: 5, total: 5 });
    expect(answer.tests!.cases[0]).toEqual({ source: "assert candidate(7, 34, 12) == 34", passed: true });
    expect(answer.parts.helper).toContain("def aux(n)");
  });

  test.each([
    ["exits early with status 0", "import os\ndef x_or_y(n, x, y):\n    os._exit(0)\n    return x"],
    [
      "prints passed",
      "def x_or_y(n, x, y):\n    print('5 passed, 0 failed')\n    print('PASS')\n    return None",
    ],
    [
      "patches the tests",
      "import builtins\ndef check(candidate):\n    return True\nbuiltins.AssertionError = type('E', (Exception,), {})\ndef x_or_y(n, x, y):\n    return None",
    ],
    ["raises SystemExit(0)", "def x_or_y(n, x, y):\n    raise SystemExit(0)"],
  ])("a completion that %s passes no test and does not succeed", async (_what, main) => {
    const { result, answer } = await run(main);
    expect(answer.tests!.passed).toBe(0);
    expect(result.success).toBe(false);
    // Structure and syntax tiers at most (0.4 + 0.6 + 0.5): nothing from the tests.
    expect(result.teamReward).toBeLessThanOrEqual(1.5);
  });
});
