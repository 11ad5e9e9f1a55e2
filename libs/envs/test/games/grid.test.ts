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
  it("steps, positions and the answer part of a text", () => {
    expect(step([2, 2], "U")).toEqual([1, 2]);
    expect(step([2, 2], "L")).toEqual([2, 1]);
    expect(formatPos([3, 1])).toBe("(3,1)");
    expect(answerText("think\n#### RRD\nmore")).toBe(" RRD");
    expect(answerText("\n\nUU\nDD")).toBe("UU");
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
