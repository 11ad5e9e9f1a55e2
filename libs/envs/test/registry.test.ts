/**
 * The registry: every environment by name, its options (defaults, refusals naming the key), its
 * tasks, its team, and whether it needs the sandbox. Each environment's own entry (its reward
 * through the registered environment, its answer) is tested beside it: coding/entry.test.ts,
 * math/entry.test.ts, writing/entry.test.ts; the papers' baselines in baselines.test.ts.
 */
import { createSandbox } from "@troupe/sandbox";
import { describe, expect, test } from "vitest";
import {
  createEnvironment,
  ENVIRONMENTS,
  environmentOptions,
  needsSandbox,
  withBaseline,
} from "../src/index.ts";

const sandbox = await createSandbox();

describe("options", () => {
  test("every environment by name, with its defaults", () => {
    expect(Object.keys(ENVIRONMENTS)).toEqual([
      "plan-path",
      "sokoban",
      "sudoku",
      "coding",
      "math",
      "writing",
      "data-file",
    ]);
    expect(environmentOptions("coding", {})).toEqual({
      roles: "helper-main",
      maxTurns: 2,
      feedback: "diagnostics",
      train: ["humaneval", "mbpp"],
      test: "coophumaneval",
      perTestTimeoutMs: 3000,
      wallMs: 10_000,
      reward: "strict",
      prompt: "full",
      unscored: false,
    });
    expect(environmentOptions("math", {})).toEqual({
      maxTurns: 3,
      fallbackAnswer: "reasoner",
      toolWallMs: 5000,
      problems: "gsm8k",
      roles: "team",
      instructions: "full",
      toolInputs: "none",
    });
    expect(environmentOptions("writing", {})).toEqual({ task: "tldr" });
    expect(environmentOptions("sudoku", {}).size).toBe(4);
  });

  test("an unknown environment, another environment's option and a bad value each name the key", () => {
    expect(() => environmentOptions("codng", {})).toThrow(
      'environment.name: unknown environment "codng" (known: plan-path, sokoban, sudoku, coding, math, writing, data-file; or environment.module: your own file)',
    );
    expect(() => environmentOptions("sudoku", { rows: 6 })).toThrow(
      /^environment\.options\.rows: not an option of environment "sudoku" \(its options: roles, maxTurns, /,
    );
    expect(() => environmentOptions("writing", { task: "poem" })).toThrow(/^environment\.options\.task: /);
    expect(() => environmentOptions("coding", { roles: "coder-tester" })).toThrow(
      /^environment\.options\.test: roles "coder-tester" needs reference solutions/,
    );
    expect(() =>
      environmentOptions("coding", { roles: "coder-tester", test: "toy", coderReward: "all" }),
    ).toThrow(/^environment\.options\.coderReward: /);
  });

  test("which environments run the agents' code", () => {
    const cases = [
      ["coding", {}],
      ["math", {}],
      ["writing", {}],
      ["plan-path", {}],
      ["plan-path", { roles: "tool" }],
      ["sokoban", { roles: "tool" }],
    ] as const;
    expect(cases.map(([name, options]) => needsSandbox({ name, options }))).toEqual([
      true,
      true,
      false,
      false,
      true,
      true,
    ]);
    expect(() => createEnvironment("coding", {})).toThrow(/needs a sandbox runner/);
  });
});

describe("tasks and teams", () => {
  test("dataset splits: sizes, disjoint, the same tasks for the same seed", () => {
    const coding = createEnvironment("coding", { runner: sandbox });
    expect(coding.generateTasks("test", 1000, 0)).toHaveLength(82); // CoopHumanEval
    const train = coding.generateTasks("train", 100_000, 0).map((t) => t.id);
    expect(train.filter((id) => id.startsWith("mbpp/"))).toHaveLength(970); // MBPP less the four tasks no solution can pass (MBPP_DROPPED)
    const halves = createEnvironment("coding", { runner: sandbox, roles: "coder-tester", test: "humaneval" });
    const test = new Set(halves.generateTasks("test", 1000, 0).map((t) => t.id));
    expect(train.filter((id) => test.has(id))).toEqual([]);
    expect(coding.generateTasks("train", 3, 77).map((t) => t.id)).toEqual(
      coding.generateTasks("train", 3, 77).map((t) => t.id),
    );
    const math = createEnvironment("math", { runner: sandbox });
    expect([
      math.generateTasks("train", 10_000, 0).length,
      math.generateTasks("test", 10_000, 0).length,
    ]).toEqual([7473, 1319]);
    const tldr = createEnvironment("writing", {});
    const arxiv = createEnvironment("writing", { task: "arxiv" });
    expect([tldr.generateTasks("train", 1e4, 0).length, tldr.generateTasks("test", 1e4, 0).length]).toEqual([
      372, 128,
    ]);
    expect([arxiv.generateTasks("train", 1e4, 0).length, arxiv.generateTasks("test", 1e4, 0).length]).toEqual(
      [1366, 320],
    );
  });

  test("default teams", () => {
    const roles = (name: string, options: Record<string, unknown>) =>
      createEnvironment(name, { runner: sandbox, ...options })
        .team("per-role")
        .roles.map((r) => r.id);
    expect(roles("coding", {})).toEqual(["helper", "main"]);
    expect(roles("coding", { roles: "coder-tester", test: "humaneval" })).toEqual(["tester", "coder"]);
    expect(roles("math", {})).toEqual(["reasoner", "tool"]);
    expect(roles("writing", {})).toEqual(["concise", "detailed"]);
    expect(roles("writing", { task: "arxiv" })).toEqual(["background", "methods"]);
    expect(roles("sudoku", { roles: "tool" })).toEqual(["tool", "plan"]);
    expect(createEnvironment("coding", { runner: sandbox }).team("shared").turnOrder).toBe("parallel");
  });

  test("the evaluation environment: the training one, except coder + tester's, which does not judge the tester", async () => {
    const sudoku = createEnvironment("sudoku", {});
    expect(sudoku.evaluationEnv).toBe(sudoku.env);
    const helperMain = createEnvironment("coding", { runner: sandbox, train: ["toy"], test: "toy" });
    expect(helperMain.evaluationEnv).toBe(helperMain.env);
    const coderTester = createEnvironment("coding", {
      runner: sandbox,
      roles: "coder-tester",
      train: ["toy"],
      test: "toy",
    });
    expect(coderTester.evaluationEnv).not.toBe(coderTester.env);
    const [task] = coderTester.generateTasks("test", 1, 0);
    const asserts = (task!.payload as { toy: { asserts: string } }).toy.asserts;
    const step = async (env: typeof coderTester.env) =>
      env.step(await env.reset(task!, 0), { tester: asserts });
    const [trained, evaluated] = [await step(coderTester.env), await step(coderTester.evaluationEnv)];
    expect(trained.localRewards.tester).toBeGreaterThan(0);
    expect(evaluated.localRewards).toEqual({});
    expect(evaluated.state).toEqual(trained.state);
    // A baseline's evaluation wraps the evaluation environment (and is the env itself where they are one).
    const team = coderTester.team("per-role");
    const single = withBaseline(coderTester, team, "single").registered;
    expect(single.evaluationEnv).not.toBe(single.env);
    const sudokuSingle = withBaseline(sudoku, sudoku.team("per-role"), "single").registered;
    expect(sudokuSingle.evaluationEnv).toBe(sudokuSingle.env);
  });

  test("a given task is checked against the payload schema, naming the field", () => {
    const coding = createEnvironment("coding", { runner: sandbox });
    expect(() =>
      coding.env.reset(
        { id: "t", split: "test", payload: { taskId: "x", prompt: "", test: "", entryPoint: "f" } },
        0,
      ),
    ).toThrow("coding task t: payload: prompt: Too small: expected string to have >=1 characters");
  });
});
