import { Rng } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { splitOfKey } from "../../src/games/splits.ts";
import {
  ARITHMETIC_TEMPLATES,
  arithmeticProgram,
  arithmeticSolution,
  arithmeticTasks,
  drawProblem,
  indexedExpression,
} from "../../src/math/arithmetic.ts";
import { extractAnswer, reasonerToolEnv } from "../../src/math/index.ts";
import { numbersPrelude } from "../../src/math/reasoner-tool-env.ts";
import { testRunner } from "../coding/local-python-runner.ts";

const { runner } = await testRunner();

describe("generated arithmetic problems", () => {
  it("a known draw: question, worked solution, the tool's program", () => {
    const [task] = arithmeticTasks("train", 1, 1);
    expect(task).toEqual({
      id: "math-arithmetic-train-4950eaf29e5225af",
      split: "train",
      payload: {
        id: "div-sub:425,17,14",
        question:
          "425 cookies are shared equally by 17 kids. Each kid eats 14. How many cookies does each kid have left?",
        solution: "425/17=25\n25-14=11\n\\boxed{11}",
        answer: 11,
        expression: "425//17-14",
      },
    });
    expect(arithmeticProgram(task!.payload.expression)).toBe("```python\nprint(425//17-14)\n```");
    expect(
      arithmeticSolution([
        { left: "2*3", value: 6 },
        { left: "6+1", value: 7 },
      ]),
    ).toBe("2*3=6\n6+1=7\n\\boxed{7}");
  });

  it("the same (split, seed) gives the same tasks; another seed others", () => {
    expect(arithmeticTasks("train", 50, 7)).toEqual(arithmeticTasks("train", 50, 7));
    const other = new Set(arithmeticTasks("train", 50, 8).map((t) => t.id));
    expect(arithmeticTasks("train", 50, 7).filter((t) => other.has(t.id)).length).toBeLessThan(5);
  });

  it("train and test are disjoint by the hash of (template, numbers), whatever the seeds", () => {
    const test = arithmeticTasks("test", 500, 0);
    expect(new Set(test.map((t) => t.id)).size).toBe(500);
    const testIds = new Set(test.map((t) => t.payload.id));
    for (const seed of [1, 2, 3]) {
      for (const t of arithmeticTasks("train", 2000, seed)) expect(testIds.has(t.payload.id)).toBe(false);
    }
    for (const t of test) {
      const [name, ...numbers] = t.payload.id.split(/[:,]/);
      expect(splitOfKey([name, ...numbers.map(Number)])).toBe("test");
    }
  });

  it("every template: two operations, a non-negative integer answer equal to the expression's value", () => {
    for (const template of ARITHMETIC_TEMPLATES) {
      for (let i = 0; i < 200; i++) {
        const drawn = drawProblem(template, new Rng(i + 1));
        const lines = drawn.steps.map((s) => `${s.left}=${s.value}`);
        expect(lines).toHaveLength(2);
        const answer = drawn.steps[1].value;
        expect(Number.isInteger(answer) && answer >= 0).toBe(true);
        // The expression in Python's integer semantics: `//` is exact here, so JS's division agrees.
        const value = Function(`return ${drawn.expression.replace(/\/\//g, "/")}`)() as number;
        expect(value).toBe(answer);
        expect(drawn.question).toMatch(/\?$/);
        for (const n of drawn.numbers) expect(drawn.question).toContain(String(n));
      }
    }
  });

  it("the demonstrations through the environment: the tool's program prints the answer in the sandbox", async () => {
    const env = reasonerToolEnv({ runner, maxTurns: 2 });
    for (const task of arithmeticTasks("test", 8, 0)) {
      const p = task.payload;
      expect(extractAnswer(p.solution)).toMatchObject({ value: p.answer, source: "boxed" });
      const r = await env.step(await env.reset(task, 0), {
        reasoner: p.solution,
        tool: arithmeticProgram(p.expression),
      });
      expect(r).toMatchObject({
        done: true,
        success: true,
        teamReward: 1,
        localRewards: { reasoner: 1, tool: 1 },
      });
    }
  });
});

describe("the tool given the question's numbers (toolInputs: numbers)", () => {
  it("a known draw: the prelude, the expression over N, the tool's prompt", async () => {
    const [task] = arithmeticTasks("train", 1, 1);
    const { question, expression } = task!.payload;
    expect(numbersPrelude(question)).toBe("N = [425, 17, 14]\n");
    expect(indexedExpression(expression, question)).toBe("N[0]//N[1]-N[2]");
    // Numbers that are not the question's, in its order, are left as they are.
    expect(indexedExpression("17*425", question)).toBe("17*425");
    expect(numbersPrelude("A $1,200 bike, 2.5 hours, 3 kids")).toBe("N = [1200, 2.5, 3]\n");
    const env = reasonerToolEnv({ runner, maxTurns: 2, instructions: "brief", toolInputs: "numbers" });
    const s0 = await env.reset(task!, 0);
    expect(env.observe(s0, "tool").messages[0]!.content).toBe(
      `Tool. Write a \`\`\`python program that prints the answer. N: the numbers.\n\nProblem: ${question}`,
    );
  });

  it("every template's expression over N: N[0], N[1], N[2] in order, and the program prints the answer in the sandbox", async () => {
    for (const template of ARITHMETIC_TEMPLATES) {
      for (let i = 0; i < 100; i++) {
        const drawn = drawProblem(template, new Rng(i + 1));
        const indexed = indexedExpression(drawn.expression, drawn.question);
        expect(indexed.match(/N\[\d\]/g)).toEqual(["N[0]", "N[1]", "N[2]"]);
        expect(indexed.replace(/N\[(\d)\]/g, (_, k) => String(drawn.numbers[Number(k)]))).toBe(
          drawn.expression,
        );
      }
    }
    const env = reasonerToolEnv({ runner, maxTurns: 2, toolInputs: "numbers" });
    for (const task of arithmeticTasks("test", 8, 0)) {
      const p = task.payload;
      const r = await env.step(await env.reset(task, 0), {
        reasoner: p.solution,
        tool: arithmeticProgram(indexedExpression(p.expression, p.question)),
      });
      expect(r).toMatchObject({ done: true, success: true, localRewards: { reasoner: 1, tool: 1 } });
    }
    // Without the option there is no N: the same program fails.
    const plain = reasonerToolEnv({ runner, maxTurns: 2 });
    const [task] = arithmeticTasks("test", 1, 0);
    const r = await plain.step(await plain.reset(task!, 0), {
      reasoner: "\\boxed{1}",
      tool: arithmeticProgram(indexedExpression(task!.payload.expression, task!.payload.question)),
    });
    expect(r.state.last.tool).toMatchObject({ answer: null, runStatus: "error" });
    expect(r.state.last.tool?.error).toContain("NameError: name 'N' is not defined");
  });
});

describe("brief instructions", () => {
  it("the exact prompts of both agents, and the error's last line on the second turn", async () => {
    const env = reasonerToolEnv({ runner, maxTurns: 2, instructions: "brief" });
    const [task] = arithmeticTasks("test", 1, 0);
    const s0 = await env.reset(task!, 0);
    const question = task!.payload.question;
    expect(env.observe(s0, "reasoner").messages[0]!.content).toBe(
      `Reasoner. End with \\boxed{number}.\n\nProblem: ${question}`,
    );
    expect(env.observe(s0, "tool").messages[0]!.content).toBe(
      `Tool. Write a \`\`\`python program that prints the answer.\n\nProblem: ${question}`,
    );
    const t1 = await env.step(s0, { reasoner: "\\boxed{7}", tool: "```python\nprint(1680" });
    expect(env.observe(t1.state, "tool").messages[0]!.content).toBe(
      `Tool. Write a \`\`\`python program that prints the answer.\n\nProblem: ${question}\n\n` +
        "Turn 2/2. You: no answer. Teammate: 7.\nError: SyntaxError: '(' was never closed",
    );
    expect(env.observe(t1.state, "reasoner").messages[0]!.content).toMatch(
      /Turn 2\/2\. You: 7\. Teammate: no answer\.$/,
    );
  });
});

describe("the single agent (the reasoner alone)", () => {
  const task = arithmeticTasks("test", 1, 0)[0]!;
  const answer = task.payload.answer!;

  it("has no tool, needs no runner, and ends when two consecutive answers agree", async () => {
    const env = reasonerToolEnv({ single: true, maxTurns: 4 });
    expect(env.agents).toEqual(["reasoner"]);
    const s0 = await env.reset(task, 0);
    expect(env.observe(s0, "reasoner").messages[0]!.content).not.toContain("teammate");
    const t1 = await env.step(s0, { reasoner: `\\boxed{${answer + 1}}` });
    expect(t1).toMatchObject({ done: false, success: false, teamReward: 0 });
    expect(env.observe(t1.state, "reasoner").messages[0]!.content).toContain(
      `Turn 2 of 4. Your last answer: ${answer + 1}. Check the work and answer again.`,
    );
    const t2 = await env.step(t1.state, { reasoner: `\\boxed{${answer}}` });
    expect(t2).toMatchObject({ done: false });
    const t3 = await env.step(t2.state, { reasoner: `so \\boxed{${answer}}` });
    expect(t3).toMatchObject({ done: true, success: true, teamReward: 1 });
  });

  it("its last answer counts at the turn limit", async () => {
    const env = reasonerToolEnv({ single: true, maxTurns: 2 });
    const t1 = await env.step(await env.reset(task, 0), { reasoner: "\\boxed{1}" });
    const t2 = await env.step(t1.state, { reasoner: `\\boxed{${answer}}` });
    expect(t2).toMatchObject({ done: true, success: true });
  });

  it("the team without a runner is refused with one line", () => {
    expect(() => reasonerToolEnv({ maxTurns: 2 })).toThrow(
      "reasonerToolEnv: the tool agent's programs need a sandbox runner",
    );
  });
});
