/**
 * The registry: every environment by name, its options (defaults, refusals naming the key), its
 * tasks, its team, whether it needs the sandbox, and its answer; the coding reward through a
 * registered environment on honest and on gaming completions; the papers' baselines.
 */
import { userObservation } from "@troupe/core";
import { createSandbox } from "@troupe/sandbox";
import { describe, expect, test } from "vitest";
import {
  type CodeAnswer,
  createEnvironment,
  ENVIRONMENTS,
  environmentOptions,
  type MathAnswer,
  mbppProblems,
  needsSandbox,
  renderAnswer,
  runTests,
  splitByRole,
  type WritingAnswer,
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

  test("a given task is checked against the payload schema, naming the field", () => {
    const coding = createEnvironment("coding", { runner: sandbox });
    expect(() =>
      coding.env.reset(
        { id: "t", split: "test", payload: { taskId: "x", prompt: "", test: "", entryPoint: "f" } },
        0,
      ),
    ).toThrow("coding task t: payload: prompt: Too small: expected string to have >=1 characters");
  });

  test("MBPP as check(candidate) problems: the references pass", async () => {
    const problems = mbppProblems().slice(10, 22);
    const reports = await Promise.all(
      problems.map((p) =>
        runTests(sandbox, {
          program: p.prompt + p.canonicalSolution,
          tests: p.test,
          style: "check",
          entryPoint: p.entryPoint,
          trusted: p.prompt,
        }),
      ),
    );
    expect(reports.map((r) => `${r.passed}/${r.total}`)).toEqual(problems.map(() => "3/3"));
    expect(problems[0]!.prompt).toBe(
      'def remove_Occ(s,ch):\n    """Write a python function to remove first and last occurrence of a given character from the string.\n    >>> remove_Occ("hello","l") == "heo"\n    """\n',
    );
  });
});

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

describe("answers", () => {
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

  test("writing: the texts and each reward tier", async () => {
    const writing = createEnvironment("writing", {});
    const [task] = writing.generateTasks("test", 1, 0);
    const state = await writing.env.reset(task!, 0);
    const result = await writing.env.step(state, { concise: "too short", detailed: "also short" });
    expect(renderAnswer("writing", result.state, [])).toEqual({
      kind: "writing",
      texts: { concise: "too short", detailed: "also short" },
      tiers: { structure: 0, coordination: 0, vocabulary: 0, style: 0, total: 0, stoppedAt: "structure" },
    } satisfies WritingAnswer);
  });
});

describe("baselines", () => {
  test("a single agent's answer split by role headers (none: the whole text for every role)", () => {
    expect(splitByRole("### concise\nshort\n### detailed\nlong text\n", ["concise", "detailed"])).toEqual({
      concise: "short",
      detailed: "long text",
    });
    expect(splitByRole("one answer", ["a", "b"])).toEqual({ a: "one answer", b: "one answer" });
  });

  const words = (n: number, w: string) => Array.from({ length: n }, (_, i) => `${w}${i}`).join(" ");

  test("each baseline's turns, what each agent sees, and the real reward at the end", async () => {
    const writing = createEnvironment("writing", {});
    const team = writing.team("per-role");
    const [task] = writing.generateTasks("test", 1, 0);
    const seen: Record<string, string[]> = {};
    for (const baseline of ["single", "naive-concat", "sequential", "discussion"] as const) {
      const { registered, team: t } = withBaseline(writing, team, baseline);
      expect(registered.env.name).toBe(`writing+${baseline}`);
      let state = await registered.env.reset(task!, 0);
      const log: string[] = [];
      for (let turn = 0; turn < t.maxTurns; turn++) {
        const stages = t.turnOrder === "parallel" ? [t.roles.map((r) => r.id)] : t.roles.map((r) => [r.id]);
        for (const stage of stages) {
          const actions = Object.fromEntries(
            stage.map((agent) => {
              const prompt = registered.env.observe(state, agent).messages.at(-1)!.content;
              log.push(
                `${agent}:${/teammate \(concise\) answered/.test(prompt) ? "sees-previous" : ""}${/first answers/.test(prompt) ? "sees-first" : ""}`,
              );
              const text =
                agent === "single"
                  ? `### concise\n${words(10, "c")}\n### detailed\n${words(30, "d")}`
                  : words(10, agent);
              return [agent, text];
            }),
          );
          const result = await registered.env.step(state, actions);
          state = result.state;
          if (result.done) log.push(`done:${result.teamReward > 0}`);
        }
      }
      seen[baseline] = log;
      const answer = renderAnswer(registered.env.name, state, []) as WritingAnswer;
      expect(answer.kind).toBe("writing");
    }
    expect(seen).toEqual({
      single: ["single:", "done:true"],
      "naive-concat": ["concise:", "detailed:", "done:true"],
      sequential: ["concise:", "detailed:sees-previous", "done:true"],
      discussion: ["concise:", "detailed:", "concise:sees-first", "detailed:sees-first", "done:true"],
    });
  });

  test("the single agent is told every role's task", () => {
    const writing = createEnvironment("writing", {});
    const { registered, team } = withBaseline(writing, writing.team("per-role"), "single");
    expect(team.roles).toEqual([{ id: "single", policy: "concise" }]);
    const state = {
      inner: {
        problem: { kind: "tldr", id: "p", title: "T", text: "post" },
        texts: null,
        reward: null,
        done: false,
      },
      drafts: {},
      first: null,
      done: false,
    };
    const prompt = registered.env.observe(state, "single").messages[0]!.content;
    expect(prompt).toMatch(/^You do this whole task alone/);
    expect(prompt).toContain("### concise\nWrite a concise TL;DR");
    expect(prompt).toContain("### detailed\nWrite a detailed summary");
    expect(userObservation("x").messages).toHaveLength(1);
  });
});
