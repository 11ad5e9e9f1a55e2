import { deepFreeze, Rng, type Task } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { gsm8kTasks, MATH_REWARDS, type MathProblem, reasonerToolEnv } from "../../src/math/index.ts";
import { testRunner } from "../coding/local-python-runner.ts";

const { runner } = await testRunner();

const problem: MathProblem = {
  id: "crafted/0",
  question:
    "Janet has 16 eggs, eats 3 and bakes with 4. She sells the rest at $2 each. How many dollars does she make?",
  solution: "16 - 3 - 4 = 9 eggs; 9 * 2 = 18.\n#### 18",
  answer: 18,
};
const task: Task<MathProblem> = { id: problem.id, split: "test", payload: problem };
const py = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

describe("reasoner + tool environment", () => {
  it("agreement on the right answer on turn 1: full rewards", async () => {
    const env = reasonerToolEnv({ runner });
    const s0 = deepFreeze(await env.reset(task, 0));
    const r = await env.step(s0, {
      reasoner: "16 - 3 - 4 = 9 eggs, 9 * 2 = 18 dollars. \\boxed{18}",
      tool: py("eggs = 16 - 3 - 4\nprint('answer:')\nprint(eggs * 2)"),
    });
    expect(r).toMatchObject({
      teamReward: 1,
      done: true,
      success: true,
      localRewards: { reasoner: 1, tool: 1 },
    });
    expect(s0.last).toEqual({});
  });

  it("disagreement, then the reasoner adopts the tool's answer (crafted transcript)", async () => {
    const env = reasonerToolEnv({ runner, maxTurns: 3 });
    const s0 = await env.reset(task, 0);
    // Reasoner: wrong but well-formatted (0.2). Tool: right, printed cleanly (0.2 + 0.8).
    const t1 = await env.step(s0, {
      reasoner: "16 - 3 = 13, 13 * 2 = 26. #### 26",
      tool: py("print((16-3-4)*2)"),
    });
    expect(t1).toMatchObject({ teamReward: 0, done: false, success: false });
    expect(t1.localRewards.reasoner).toBeCloseTo(MATH_REWARDS.format, 12);
    expect(t1.localRewards.tool).toBeCloseTo(1, 12);
    const view = env.observe(t1.state, "reasoner").messages[0]!.content;
    expect(view).toContain("Your last answer: 26. Your teammate's last answer: 18.");
    // Turn 2: only the reasoner acts; no boxed/#### → format 0, correct 0.8; they agree → done.
    const t2 = await env.step(t1.state, { reasoner: "I forgot the 4 baked eggs; she makes 18 dollars." });
    expect(t2).toMatchObject({ teamReward: 1, done: true, success: true });
    expect(t2.localRewards).toEqual({ reasoner: MATH_REWARDS.correct });
  });

  it("tool errors are shown back to the tool and earn no format reward; no agreement → fallback", async () => {
    const env = reasonerToolEnv({ runner, maxTurns: 2, fallbackAnswer: "reasoner" });
    const s0 = await env.reset(task, 0);
    const t1 = await env.step(s0, { reasoner: "\\boxed{18}", tool: py("print(1/0)") });
    expect(t1.localRewards).toEqual({ reasoner: 1, tool: 0 });
    expect(env.observe(t1.state, "tool").messages[0]!.content).toContain("ZeroDivisionError");
    const t2 = await env.step(t1.state, { reasoner: "\\boxed{18}", tool: "I think it is 20" });
    expect(t2.localRewards).toEqual({ reasoner: 1, tool: 0 });
    // Never agreed; the reasoner's 18 counts.
    expect(t2).toMatchObject({ done: true, success: true, teamReward: 1 });

    const strict = reasonerToolEnv({ runner, maxTurns: 1, fallbackAnswer: "none" });
    const r = await strict.step(await strict.reset(task, 0), {
      reasoner: "\\boxed{18}",
      tool: py("print(17)"),
    });
    expect(r).toMatchObject({
      done: true,
      success: false,
      teamReward: 0,
      localRewards: { reasoner: 1, tool: 0.2 },
    });
  });

  it("random policy over many GSM8K tasks: no exceptions, rewards within bounds", async () => {
    const env = reasonerToolEnv({ runner, maxTurns: 2, toolWallMs: 400 });
    const tasks = (await gsm8kTasks("train")).slice(0, 15);
    const rng = new Rng(3);
    for (const t of tasks) {
      const a = t.payload.answer!;
      const reasoners = [
        "",
        "\\boxed{",
        `\\boxed{${a}}`,
        `#### ${a + 1}`,
        "the answer is 3/4",
        "\\boxed{\\frac{1}{0}}",
      ];
      const tools = [
        "",
        py(`print(${a})`),
        py("while True: pass"),
        py("raise SystemExit(3)"),
        "```python\nprint(",
        py("print('x')"),
      ];
      let state = deepFreeze(await env.reset(t, 0));
      for (let turn = 0; turn < 2 && !state.done; turn++) {
        const r = await env.step(state, { reasoner: rng.pick(reasoners), tool: rng.pick(tools) });
        expect(r.teamReward).toBeGreaterThanOrEqual(env.rewardBounds!.team[0]);
        expect(r.teamReward).toBeLessThanOrEqual(env.rewardBounds!.team[1]);
        for (const v of Object.values(r.localRewards)) {
          expect(v).toBeGreaterThanOrEqual(env.rewardBounds!.local[0]);
          expect(v).toBeLessThanOrEqual(env.rewardBounds!.local[1] + 1e-12);
        }
        state = deepFreeze(r.state);
      }
    }
  }, 60_000);
});
