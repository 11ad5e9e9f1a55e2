import { describe, expect, it } from "vitest";
import { parseEpisodeOptions } from "../../src/games/index.ts";

describe("the episode options", () => {
  it("defaults for every field left out", () => {
    expect(parseEpisodeOptions("plan-path", {})).toEqual({
      roles: "compact",
      maxTurns: 4,
      hints: [],
      reportLine: "after-hints",
      maxPlanLength: 64,
      toolWallMs: 10_000,
      toolOutputChars: 1500,
      seed: 0,
    });
    expect(parseEpisodeOptions("sokoban", { roles: "tool-call", maxTurns: 2 })).toMatchObject({
      roles: "tool-call",
      maxTurns: 2,
    });
  });

  it("one error line naming the game and the field", () => {
    expect(() => parseEpisodeOptions("sudoku", { maxTurns: 0 })).toThrow(/^sudoku options: maxTurns: /);
    expect(() => parseEpisodeOptions("sudoku", { runner: {} as never })).toThrow(
      "sudoku options: runner: runner must be a CodeRunner (an object with run(request))",
    );
  });
});
