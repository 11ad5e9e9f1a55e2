/** The games in the registry: options without the runner, the sandbox only for `tool`, the answers. */
import { describe, expect, it } from "vitest";
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

  it("Plan-Path's answer replays each plan's executed moves cell by cell, skipping an unreadable one", () => {
    const env = planPathEnv();
    const unreadable = stepSync(env, env.reset(task, 0), { planner: "east" });
    const solved = stepSync(env, unreadable.state, { fixer: "DDRDRR" });
    const answer = renderAnswer("plan-path", solved.state, [
      { agent: "planner", text: "east", info: unreadable.info?.planner },
      { agent: "fixer", text: "DDRDRR", info: solved.info?.fixer },
    ]);
    const cells = "00 10 20 21 31 32 33".split(" ").map((rc) => [Number(rc[0]), Number(rc[1])]);
    expect(answer).toMatchObject({ kind: "plan-path", moves: "DDRDRR", path: cells, position: [3, 3] });
    expect(answer).toMatchObject({
      grid: ["..#.", ".#..", "...#", "#..A"],
      optimal: 6,
      report: "DDRDRR: solved",
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
