/** What an agent is told between turns: the diagnostics text, the fixed transitions, the reward option. */
import { describe, expect, it } from "vitest";
import {
  CODING_REWARDS,
  checkChoice,
  checkReward,
  describeReport,
  diagnosticsFeedback,
  passFailFeedback,
  selfRevisionFeedback,
} from "../../src/coding/feedback.ts";
import type { TestReport } from "../../src/coding/harness.ts";
import { feedbackContext as context } from "./fixtures.ts";

const passing: TestReport = {
  syntaxOk: true,
  tests: [
    { source: "assert candidate([]) == 0", passed: true },
    { source: "assert candidate([1]) == 2", passed: true },
  ],
  passed: 2,
  total: 2,
  setupErrors: [],
  output: "",
  functions: [],
  runStatus: "ok",
};

const failing: TestReport = {
  ...passing,
  tests: [
    { source: "assert candidate([]) == 0", passed: false, error: "AssertionError" },
    { source: "assert candidate([1]) == 2", passed: true },
    { source: "assert candidate([1, 2]) == 6", passed: false },
  ],
  passed: 1,
  total: 3,
  setupErrors: ["zero = [] -> NameError: name 'x' is not defined"],
  output: "debug 1\n",
};

describe("describeReport", () => {
  it("hides the failing asserts and the setup's source unless tests are revealed", () => {
    expect(describeReport(failing, false)).toBe(
      [
        "Passed 1 of 3 tests.",
        "- a test failed: AssertionError",
        "- a test failed: failed",
        "Test setup error: NameError: name 'x' is not defined",
        "Your code printed:\ndebug 1",
      ].join("\n"),
    );
    expect(describeReport(failing, true)).toBe(
      [
        "Passed 1 of 3 tests.",
        "- assert candidate([]) == 0\n  -> AssertionError",
        "- assert candidate([1, 2]) == 6\n  -> failed",
        "Test setup error: zero = [] -> NameError: name 'x' is not defined",
        "Your code printed:\ndebug 1",
      ].join("\n"),
    );
  });

  it("names a run that failed, a syntax error and a load error; lists at most maxFailures failures", () => {
    const broken: TestReport = {
      ...passing,
      syntaxOk: false,
      syntaxError: "line 1: invalid syntax",
      loadError: "NameError: f",
      harnessError: "killed (output limit)",
      tests: [],
      passed: 0,
      total: 0,
    };
    expect(describeReport(broken, false)).toBe(
      "The run failed: killed (output limit)\nSyntax error: line 1: invalid syntax\nError while loading the code: NameError: f",
    );
    const many: TestReport = {
      ...passing,
      tests: Array.from({ length: 8 }, (_, i) => ({ source: `t${i}`, passed: false, error: `E${i}` })),
      passed: 0,
      total: 8,
    };
    expect(describeReport(many, false, 2).split("\n")).toEqual([
      "Passed 0 of 8 tests.",
      "- a test failed: E0",
      "- a test failed: E1",
      "- … and 6 more failures",
    ]);
    expect(describeReport(passing, false)).toBe("Passed 2 of 2 tests.");
  });
});

describe("feedback transitions", () => {
  it("diagnostics: the report and what to fix; with revealTests the asserts too", async () => {
    const plain = diagnosticsFeedback();
    expect(plain.name).toBe("diagnostics");
    expect(await plain.feedback(context(failing))).toBe(
      `Execution feedback on your team's last attempt:\n${describeReport(failing, false)}\nFix the problems in the main function \`double_sum\`.`,
    );
    const revealing = diagnosticsFeedback({ revealTests: true });
    expect(revealing.name).toBe("diagnostics+tests");
    expect(await revealing.feedback(context(failing))).toContain(
      "- assert candidate([]) == 0\n  -> AssertionError",
    );
    const silent = { ...passing, tests: [], passed: 0, total: 0 };
    expect(await plain.feedback(context(silent))).toBe(
      "Execution feedback on your team's last attempt:\nNo diagnostics.\nFix the problems in the main function `double_sum`.",
    );
  });

  it("pass-fail: passed only when every test ran and passed", async () => {
    const t = passFailFeedback();
    expect(t.name).toBe("pass-fail");
    expect(await t.feedback(context(passing))).toBe("Your team's last attempt passed the tests.");
    expect(await t.feedback(context(failing))).toBe("Your team's last attempt failed the tests.");
    expect(await t.feedback(context({ ...passing, tests: [], passed: 0, total: 0 }))).toBe(
      "Your team's last attempt failed the tests.",
    );
    expect(await t.feedback(context({ ...passing, harnessError: "killed" }))).toBe(
      "Your team's last attempt failed the tests.",
    );
  });

  it("self-revision: no information, only the request to review", async () => {
    const t = selfRevisionFeedback();
    expect(t.name).toBe("self-revision");
    expect(await t.feedback(context(failing))).toBe(
      "Review your previous code for the main function `double_sum` and revise it if it can be improved.",
    );
  });
});

describe("checkReward", () => {
  it("strict or paper; anything else is one line naming the environment", () => {
    expect(CODING_REWARDS).toEqual(["strict", "paper"]);
    expect(checkReward("auxMainEnv", "paper")).toBe("paper");
    expect(() => checkReward("coderTesterEnv", 3)).toThrow(
      'coderTesterEnv: reward must be "strict" or "paper", got 3',
    );
    expect(() => checkReward("coderTesterEnv", undefined)).toThrow("got undefined");
  });

  it("checkChoice: either value, anything else one line naming the environment and the option", () => {
    expect(checkChoice("coderTesterEnv", "coderReward", ["tests", "tiers"], "tiers")).toBe("tiers");
    expect(() => checkChoice("coderTesterEnv", "coderReward", ["tests", "tiers"], "all")).toThrow(
      'coderTesterEnv: coderReward must be "tests" or "tiers", got "all"',
    );
  });
});
