import { describe, expect, it } from "vitest";
import {
  answerText,
  bfsDistances,
  descendPath,
  formatPos,
  parseDirections,
  step,
} from "../../src/games/index.ts";
import { puzzle } from "./hand-4x4.ts";

describe("grid vocabulary", () => {
  it.each([
    ["a step up", step([2, 2], "U"), [1, 2]],
    ["a step left", step([2, 2], "L"), [2, 1]],
    ["a cell as reports name it", formatPos([3, 1]), "(3,1)"],
    ["the answer after ####", answerText("think\n#### RRD\nmore"), " RRD"],
    ["else the first non-empty line", answerText("\n\nUU\nDD"), "UU"],
  ])("%s", (_, got, expected) => {
    expect(got).toEqual(expected);
  });

  it("parses letters, words and lists; anything else is unreadable", () => {
    expect(parseDirections("u r, D")).toEqual(["U", "R", "D"]);
    expect(parseDirections('["up", "left"]')).toEqual(["U", "L"]);
    expect(parseDirections("RRX")).toBeNull();
    expect(parseDirections("")).toBeNull();
  });

  it("BFS distances from the goal of the hand 4×4, and the shortest path down them (U, D, L, R ties)", () => {
    const open = (r: number, c: number) => puzzle.grid[r]![c] === ".";
    const dist = bfsDistances(4, 4, open, [3, 3]);
    expect([...dist]).toEqual([6, 7, -1, 5, 5, -1, 3, 4, 4, 3, 2, -1, -1, 2, 1, 0]);
    expect(descendPath(4, 4, dist, [0, 0])?.join("")).toBe("DDRDRR");
    expect(descendPath(4, 4, dist, [0, 2])).toBeNull();
  });
});
