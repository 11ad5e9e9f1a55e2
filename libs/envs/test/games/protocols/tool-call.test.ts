/**
 * Sokoban's and Sudoku's `tool-call` roles: the `push R C` and `row R` commands, what the plan agent
 * reads, the tool's rewards, the demonstrations (the tool's output is the plan they teach) and the
 * answers with each turn's call.
 */
import { Rng, type Task } from "@troupe/core";
import { describe, expect, it } from "vitest";
import type { BoardAnswer, ExecutedAction } from "../../../src/answer.ts";
import {
  type GameEnvironment,
  parsePushCommand,
  planBoxTo,
  runPushCommand,
  runRowCommand,
  type SokobanPuzzle,
  type SudokuPuzzle,
  sokobanEnv,
  sokobanHint,
  sudokuEnv,
} from "../../../src/games/index.ts";
import { renderAnswer } from "../../../src/registry.ts";
import { expectWithinRewardBounds } from "../expect.ts";
import { oneBox, puzzle as sudoku } from "../hand-puzzles.ts";
import { stepSync } from "../step-sync.ts";

const sokobanTask: Task<SokobanPuzzle> = { id: "hand", split: "test", payload: oneBox };
const start = { player: oneBox.player, boxes: oneBox.boxes };

describe("the push command", () => {
  it("parses exactly `push R C`, ends trimmed", () => {
    expect(parsePushCommand("push 3 3")).toEqual({ target: [3, 3] });
    expect(parsePushCommand(" push 0 12\n")).toEqual({ target: [0, 12] });
    for (const text of ["", "push", "push 3", "push 3 3 3", "push  3 3", "Push 3 3", "push 03 3", "path 3 3"])
      expect(parsePushCommand(text), text).toEqual({ error: 'expected "push R C"' });
  });

  it("gives the shortest plan that gets a box onto the cell, or says why there is none", () => {
    const run = (text: string) => runPushCommand(oneBox, start, text);
    expect(run("push 3 3")).toEqual({ output: "DRURD", moves: ["D", "R", "U", "R", "D"], bad: false });
    expect(run("push 2 3").output).toBe("DR"); // one push right
    expect(run("push 4 2").output).toBe("RDD");
    expect(planBoxTo(oneBox, start, [4, 4])).toEqual([..."DRURDDLDR"]);
    expect(run("push 6 1")).toEqual({ output: "bad command: 6 1 is off the board", moves: null, bad: true });
    expect(run("push 0 0").output).toBe("bad command: 0 0 is a wall");
    expect(run("push 2 2").output).toBe("bad command: 2 2 already holds a box");
    // A box in the corner (4,2) never moves again.
    expect(runPushCommand(oneBox, { player: [1, 1], boxes: [[4, 2]] }, "push 3 3")).toEqual({
      output: "no path",
      moves: null,
      bad: false,
    });
    expect(run("UURD").output).toBe('bad command: expected "push R C"');
  });
});

describe("Sokoban tool-call roles", () => {
  const env = sokobanEnv({ roles: "tool-call", hints: ["positions", "neighbours"], maxTurns: 2 });

  it("compact prompts with the hint lines, and the tool's output in the plan agent's", () => {
    expect(env.agents).toEqual(["tool", "plan"]);
    const s0 = env.reset(sokobanTask, 0);
    expect(env.observe(s0, "tool").messages[0]!.content).toBe(
      "soko tool\n######\n#@___#\n#_$_##\n#__._#\n##___#\n######\nplayer 1 1\nbox 2 2\ntarget 3 3\nnear U# D_ L# R_\ncall:",
    );
    const called = stepSync(env, s0, { tool: "push 3 3" });
    expect(called.localRewards).toEqual({ tool: 1 });
    expect(called.teamReward).toBe(0);
    expect(env.observe(called.state, "plan").messages[0]!.content).toMatch(/\ntool: DRURD\nplan:$/);
    const solved = stepSync(env, called.state, { plan: "DRURD" });
    expect(solved.success).toBe(true);
    // 5 steps, the box onto its target, solved at the optimum: −0.05 + 0.1 + 1 + 0.5.
    expect(solved.teamReward).toBeCloseTo(1.55, 12);
    expect(stepSync(env, s0, { tool: "push 2 3" }).localRewards).toEqual({ tool: 0 });
    expect(stepSync(env, s0, { tool: "push 0 0" }).localRewards.tool).toBeCloseTo(-0.1, 12);
  });

  it("the other hints", () => {
    expect(sokobanHint("position", oneBox, start)).toBe("at 1,1 box 2,2 target 3,3");
    expect(sokobanHint("offset", oneBox, start)).toBe("box D1 R1");
    expect(sokobanHint("offset", oneBox, { player: [2, 3], boxes: [[3, 3]] })).toBe("box here");
    expect(sokobanHint("neighbours", oneBox, { player: [2, 1], boxes: [[2, 2]] })).toBe("near U_ D_ L# R$");
    expect(sokobanHint("positions", oneBox, start)).toBe("player 1 1\nbox 2 2\ntarget 3 3");
  });

  it("demonstrations: the tool calls the target and its output is the solver's plan", () => {
    const gen = sokobanEnv({ roles: "tool-call", maxTurns: 2 });
    for (const t of gen.generateTasks("train", 150, { seed: 4 })) {
      const s0 = gen.reset(t, 0);
      const call = gen.demo(t, s0, "tool");
      const [target] = t.payload.targets;
      expect(call).toBe(`push ${target![0]} ${target![1]}`);
      const called = stepSync(gen, s0, { tool: call });
      expect(called.localRewards.tool).toBe(1);
      expect(called.state.toolOutput).toBe(gen.demo(t, called.state, "plan"));
      const planned = stepSync(gen, called.state, { plan: called.state.toolOutput! });
      expect(planned.success).toBe(true);
      expect(planned.state.movesTaken).toBe(t.payload.optimal);
    }
  });

  it("random commands and plans stay within rewardBounds, and the answer lists each call", () => {
    const rng = new Rng(3);
    for (const t of env.generateTasks("train", 60, { seed: 8 })) {
      let state = env.reset(t, 0);
      let done = false;
      const actions: ExecutedAction[] = [];
      for (let turn = 0; turn < env.maxTurns && !done; turn++) {
        for (const agent of env.agents) {
          if (done) break;
          const text =
            agent === "tool"
              ? `push ${rng.int(6)} ${rng.int(6)}`
              : Array.from({ length: rng.int(8) }, () => rng.pick(["U", "D", "L", "R"])).join("");
          const r = stepSync(env, state, { [agent]: text });
          expectWithinRewardBounds(r, env.rewardBounds);
          actions.push({ agent, text, info: r.info?.[agent] });
          state = r.state;
          done = r.done;
        }
      }
      const answer = renderAnswer("sokoban", state, actions) as BoardAnswer;
      expect(answer.calls?.length).toBeGreaterThan(0);
      expect(answer.calls![0]!.command).toBe(actions[0]!.text);
    }
  });
});

const sudokuTask: Task<SudokuPuzzle> = { id: "hand-4x4", split: "test", payload: sudoku };

describe("the Sudoku row command", () => {
  it("gives the solver's placements of one row: erasures first, then the missing values", () => {
    const board = { cells: sudoku.givens };
    expect(runRowCommand(sudoku, board, " row 0\n")).toEqual({
      output: "012 023",
      moves: [
        { row: 0, col: 1, value: 2 },
        { row: 0, col: 2, value: 3 },
      ],
      bad: false,
    });
    expect(runRowCommand(sudoku, board, "row 3").output).toBe("304 331");
    // (0,1) wrongly holds 3: erase it, then place 2 there and 3 at (0,2).
    const wrong = { cells: sudoku.givens.map((v, i) => (i === 1 ? 3 : v)) };
    expect(runRowCommand(sudoku, wrong, "row 0").output).toBe("010 012 023");
    const rowDone = { cells: sudoku.givens.map((v, i) => (i < 4 ? sudoku.solution[i]! : v)) };
    expect(runRowCommand(sudoku, rowDone, "row 0")).toEqual({
      output: "row 0 is complete",
      moves: null,
      bad: false,
    });
    expect(runRowCommand(sudoku, board, "row 4").output).toBe("bad command: row 4 is off the board");
    for (const text of ["", "row", "row 01", "Row 1", "row 1 2", "solve"])
      expect(runRowCommand(sudoku, board, text), text).toEqual({
        output: 'bad command: expected "row R"',
        moves: null,
        bad: true,
      });
  });

  it("roles: the tool earns its row's progress, the plan agent copies it; demonstrations agree", () => {
    const env = sudokuEnv({ roles: "tool-call", maxTurns: 4 });
    const s0 = env.reset(sudokuTask, 0);
    expect(env.demo(sudokuTask, s0, "tool")).toBe("row 0");
    const called = stepSync(env, s0, { tool: "row 0" });
    expect(called.localRewards.tool).toBeCloseTo(2 / 8, 12); // 2 of the 8 cells left
    expect(env.observe(called.state, "plan").messages[0]!.content).toBe(
      "sudoku plan\n1..4\n.41.\n2..3\n.32.\ntool: 012 023\nplan:",
    );
    expect(env.demo(sudokuTask, called.state, "plan")).toBe("012 023");
    const t1 = stepSync(env, called.state, { plan: "012 023" });
    expect(t1.done).toBe(false);
    expect(env.demo(sudokuTask, t1.state, "tool")).toBe("row 1");
    // A call on a complete row gives nothing to copy: the plan demonstration is the solver's plan.
    const idle = stepSync(env, t1.state, { tool: "row 0" });
    expect(idle.localRewards).toEqual({ tool: 0 });
    expect(env.demo(sudokuTask, idle.state, "plan")).toBe("103 132 211 224 304 331");
    expect(stepSync(env, s0, { tool: "solve" }).localRewards.tool).toBeCloseTo(-0.1, 12);

    const gen = sudokuEnv({ roles: "tool-call", maxTurns: 4, givens: 6, maxGivens: 10 });
    for (const t of gen.generateTasks("train", 100, { seed: 2 })) {
      let state = gen.reset(t, 0);
      while (!state.done) {
        const call = stepSync(gen, state, { tool: gen.demo(t, state, "tool") });
        expect(call.localRewards.tool).toBeGreaterThan(0);
        expect(gen.demo(t, call.state, "plan")).toBe(call.state.toolOutput);
        state = stepSync(gen, call.state, { plan: gen.demo(t, call.state, "plan") }).state;
      }
      expect(state.solved).toBe(true); // a row a turn: at most 4 turns
    }
  });

  it("maxGivens: each puzzle keeps between givens and maxGivens clues; without it puzzles stay as they were", () => {
    const mixed = sudokuEnv({ givens: 6, maxGivens: 10 }).generateTasks("test", 200, { seed: 1 });
    const clues = mixed.map((t) => t.payload.givens.filter((v) => v !== 0).length);
    expect(Math.min(...clues)).toBe(6);
    expect(Math.max(...clues)).toBe(10);
    expect(new Set(clues).size).toBe(5);
    const plain = sudokuEnv().generateTasks("test", 20, { seed: 1 });
    const again = sudokuEnv({ givens: 6 }).generateTasks("test", 20, { seed: 1 });
    expect(plain.map((t) => t.id)).toEqual(again.map((t) => t.id));
    expect(() => sudokuEnv({ givens: 8, maxGivens: 7 }).generateTasks("test", 1)).toThrow(
      "sudoku options: maxGivens (7) is below givens (8)",
    );
  });
});

describe("toolWidth: a tool call's plan padded to a fixed width", () => {
  /** What the plan agent reads after one call, and the boards and rewards of its two answers. */
  function afterCall<P>(env: GameEnvironment<P, unknown>, task: Task<P>, call: string) {
    const called = stepSync(env, env.reset(task, 0), { tool: call });
    const output = called.state.toolOutput!;
    const demo = env.demo(task, called.state, "plan");
    const verbatim = stepSync(env, called.state, { plan: output });
    const plain = stepSync(env, called.state, { plan: demo });
    return { prompt: env.observe(called.state, "plan").messages[0]!.content, output, demo, verbatim, plain };
  }

  it("the plan agent reads the padded plan; its demonstration and a verbatim copy are the same plan", () => {
    const sudokuWide = sudokuEnv({ roles: "tool-call", maxTurns: 4, toolWidth: 15 });
    const runs = [
      afterCall(sudokuWide, sudokuTask, "row 0"),
      afterCall(sokobanEnv({ roles: "tool-call", maxTurns: 2, toolWidth: 12 }), sokobanTask, "push 3 3"),
    ];
    expect(runs.map((r) => r.output)).toEqual(["012 023........", "DRURD......."]);
    const unpadded = sudokuEnv({ roles: "tool-call", maxTurns: 4, toolWidth: 0 });
    expect(afterCall(unpadded, sudokuTask, "row 0").output).toBe("012 023");
    for (const r of runs) {
      expect(r.prompt).toContain(`\ntool: ${r.output}\nplan:`);
      expect(r.output).toBe(r.demo.padEnd(r.output.length, "."));
      expect(r.verbatim.state.board).toEqual(r.plain.state.board);
      expect(r.verbatim.teamReward).toBe(r.plain.teamReward);
    }
    // Messages are not plans: never padded.
    const bad = stepSync(sudokuWide, sudokuWide.reset(sudokuTask, 0), { tool: "row 9" });
    expect(bad.state.toolOutput).toBe("bad command: row 9 is off the board");
  });
});
