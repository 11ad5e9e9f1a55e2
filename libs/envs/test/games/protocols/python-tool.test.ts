/**
 * The Stronger-MAS tool/plan roles, run through the real sandbox (`createSandbox` from
 * @troupe/sandbox, bubblewrap). Skipped, with the sandbox's reason, only where bubblewrap cannot run.
 */
import type { StepResult, Task } from "@troupe/core";
import { type CodeRunner, createSandbox, SandboxUnavailableError } from "@troupe/sandbox";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type GameEnvironment,
  type GameState,
  parseDirections,
  planPathDemo,
  planPathEnv,
  type SudokuPuzzle,
  sokobanDemo,
  sokobanEnv,
  sudokuDemo,
  sudokuEnv,
} from "../../../src/games/index.ts";

type AnyState = GameState<unknown, unknown>;
type AnyEnv = GameEnvironment<unknown, unknown>;
type AnyDemo = (task: Task<never>, state: GameState<never, never>, agent: string) => string;

let runner: CodeRunner | null = null;
let unavailable = "";

beforeAll(async () => {
  try {
    runner = await createSandbox({ concurrency: 2 });
  } catch (error) {
    if (!(error instanceof SandboxUnavailableError)) throw error;
    unavailable = error.reason;
  }
});

const skipReason = () => `bubblewrap sandbox unavailable here: ${unavailable}`;

const games = [
  {
    name: "plan-path",
    make: (r: CodeRunner) => planPathEnv({ roles: "tool", runner: r }),
    demo: planPathDemo,
  },
  { name: "sokoban", make: (r: CodeRunner) => sokobanEnv({ roles: "tool", runner: r }), demo: sokobanDemo },
  { name: "sudoku", make: (r: CodeRunner) => sudokuEnv({ roles: "tool", runner: r }), demo: sudokuDemo },
] as const;

const step = async (env: AnyEnv, state: AnyState, agent: string, text: string) =>
  (await env.step(state, { [agent]: text })) as StepResult<AnyState>;

describe.each(games)("$name: tool + plan roles through the sandbox", ({ name, make, demo }) => {
  it("the tool's Python solver prints an optimal plan; the plan agent submits it and solves", async (ctx) => {
    if (runner === null) return ctx.skip(skipReason());
    const env = make(runner) as unknown as AnyEnv;
    expect(env.agents).toEqual(["tool", "plan"]);
    for (const task of env.generateTasks("test", 6, { seed: 13 })) {
      const s0 = env.reset(task, 0);
      const toolText = (demo as AnyDemo)(task as never, s0 as never, "tool");
      const r1 = await step(env, s0, "tool", toolText);
      expect(r1.teamReward).toBe(0); // the tool moves nothing
      expect(r1.localRewards).toEqual({ tool: 1 }); // its printed plan would solve the puzzle
      expect(r1.state.turn).toBe(0);
      const printed = r1.state.toolOutput!.trim();
      if (name !== "sudoku") {
        // An independent (Python) BFS agrees with the TypeScript solver on the optimum.
        expect(parseDirections(printed)).toHaveLength((task.payload as { optimal: number }).optimal);
      }
      expect(env.observe(r1.state, "plan").messages[1]!.content).toContain(
        `Tool agent's program output:\n${printed}`,
      );
      const r2 = await step(env, r1.state, "plan", `The tool found it.\n#### ${printed}`);
      expect(r2.success).toBe(true);
      expect(r2.localRewards).toEqual({ plan: 1 });
      expect(r2.state.turn).toBe(1);
    }
  });

  it("tool prompts carry the board as data; failing programs and missing code blocks earn −0.1", async (ctx) => {
    if (runner === null) return ctx.skip(skipReason());
    const env = make(runner) as unknown as AnyEnv;
    const [task] = env.generateTasks("train", 1, { seed: 2 });
    const s0 = env.reset(task!, 0);
    const prompt = env.observe(s0, "tool").messages;
    expect(prompt[0]!.role).toBe("system");
    expect(prompt[1]!.content).toContain("The variable `puzzle` already holds the current board as data");
    const crash = await step(env, s0, "tool", "```python\nraise ValueError('boom')\n```");
    expect(crash.state.toolOutput).toMatch(/^\[error\][\s\S]*ValueError: boom/);
    expect(crash.localRewards).toEqual({ tool: -0.1 });
    const none = await step(env, s0, "tool", "I would use BFS.");
    expect(none.state.toolOutput).toBe("(the tool agent wrote no ```python block)");
    expect(none.localRewards).toEqual({ tool: -0.1 });
  });
});

describe("sudoku tool solver from a board with a mistake", () => {
  it("erases the wrong value, then fills", async (ctx) => {
    if (runner === null) return ctx.skip(skipReason());
    const env = sudokuEnv({ roles: "tool", runner });
    const loose: SudokuPuzzle = {
      size: 4,
      boxRows: 2,
      boxCols: 2,
      givens: [1, ...new Array<number>(15).fill(0)],
      solution: [1, 2, 3, 4, 3, 4, 1, 2, 2, 1, 4, 3, 4, 3, 2, 1],
    };
    const task: Task<SudokuPuzzle> = { id: "loose", split: "test", payload: loose };
    // (0,1) = 3 is consistent but wrong. The Python solver re-solves from the givens alone, so it may
    // find any of the grid's solutions; the env's check is rule-based, so any full grid solves.
    const r1 = await env.step(env.reset(task, 0), { plan: "#### 013" });
    const r2 = await env.step(r1.state, { tool: sudokuDemo(task, r1.state, "tool") });
    expect(r2.state.toolOutput).toMatch(/^010 /);
    const r3 = await env.step(r2.state, { plan: `#### ${r2.state.toolOutput}` });
    expect(r3.success).toBe(true);
  });
});
