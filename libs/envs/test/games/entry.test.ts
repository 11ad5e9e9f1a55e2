/** The games in the registry: options without the runner, the sandbox only for `tool`, the answers. */
import { describe, expect, it } from "vitest";
import type { ExecutedAction } from "../../src/answer.ts";
import { planPathEnv, sokobanEnv } from "../../src/games/index.ts";
import { needsSandbox, renderAnswer } from "../../src/registry.ts";
import { task } from "./hand-4x4.ts";
import { oneBox } from "./hand-puzzles.ts";
import { stepSync } from "./step-sync.ts";

describe("the game entries", () => {
  it("only roles `tool` needs the sandbox", () => {
    expect(needsSandbox({ name: "plan-path", options: { roles: "tool" } })).toBe(true);
    expect(needsSandbox({ name: "sokoban", options: { roles: "tool-call" } })).toBe(false);
    expect(needsSandbox({ name: "sudoku", options: {} })).toBe(false);
  });

  it("Plan-Path's answer replays each plan's executed moves cell by cell", () => {
    const env = planPathEnv();
    const first = stepSync(env, env.reset(task, 0), { planner: "DDRRRR" });
    const second = stepSync(env, first.state, { fixer: "DR" });
    const actions: ExecutedAction[] = [
      { agent: "planner", text: "DDRRRR", info: first.info?.planner },
      { agent: "fixer", text: "DR", info: second.info?.fixer },
    ];
    expect(renderAnswer("plan-path", second.state, actions)).toEqual({
      kind: "plan-path",
      grid: ["..#.", ".#..", "...#", "#..A"],
      start: [0, 0],
      goal: [3, 3],
      position: [3, 3],
      path: [
        [0, 0],
        [1, 0],
        [2, 0],
        [2, 1],
        [2, 2],
        [3, 2],
        [3, 3],
      ],
      moves: "DDRRDR",
      optimal: 6,
      report: "DR: solved",
    });
  });

  it("a board game's answer is its final board, the moves taken and the report", () => {
    const env = sokobanEnv();
    const done = stepSync(env, env.reset({ id: "one-box", split: "test", payload: oneBox }, 0), {
      planner: "DRURD",
    });
    expect(
      renderAnswer("sokoban", done.state, [{ agent: "planner", text: "DRURD", info: done.info?.planner }]),
    ).toEqual({
      kind: "sokoban",
      board: ["######", "#____#", "#__@##", "#__*_#", "##___#", "######"],
      movesTaken: 5,
      report: "DRURD: solved",
    });
  });
});
