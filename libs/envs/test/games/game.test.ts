/** What the role protocols rely on of a game: plans executed by the stopping rules, progress, tool commands. */
import { describe, expect, it } from "vitest";
import {
  badToolCall,
  clamp,
  executePlan,
  parseCellCommand,
  planProgress,
  SokobanRewardsSchema,
  sokobanGame,
} from "../../src/games/index.ts";
import { oneBox } from "./hand-puzzles.ts";

const game = sokobanGame(SokobanRewardsSchema.parse({}));
const start = { player: oneBox.player, boxes: oneBox.boxes };

describe("executePlan", () => {
  it("stops at the first invalid move, which is not applied", () => {
    const run = executePlan(game, oneBox, start, ["R", "U", "R"], 64);
    expect(run).toMatchObject({ executed: 1, solved: false, invalid: "wall at step 2 (1,2)", cut: 0 });
    expect(run.board.player).toEqual([1, 2]);
    expect(run.reward).toBeCloseTo(-0.01 - 0.1, 12);
  });

  it("stops once solved, and drops the moves beyond maxPlanLength", () => {
    expect(executePlan(game, oneBox, start, [..."DRURDUU"] as never, 64)).toMatchObject({
      executed: 5,
      solved: true,
    });
    expect(executePlan(game, oneBox, start, [..."DRURD"] as never, 2)).toMatchObject({ executed: 2, cut: 3 });
  });
});

describe("planProgress", () => {
  it("(h_before − h_after) / h_before, −1 when unsolvable, plus the penalty, within [−1, 1]", () => {
    expect(planProgress(4, 1, false, -0.1)).toBeCloseTo(0.75, 12);
    expect(planProgress(4, 1, true, -0.1)).toBeCloseTo(0.65, 12);
    expect(planProgress(4, Number.POSITIVE_INFINITY, true, -0.1)).toBe(-1);
    expect(planProgress(0, 0, false, -0.1)).toBe(0);
    expect(clamp(2, -1, 1)).toBe(1);
  });
});

describe("tool commands", () => {
  it("`<verb> R C` exactly, numbers without leading zeros", () => {
    expect(parseCellCommand("path", " path 3 12 ")).toEqual({ target: [3, 12] });
    expect(parseCellCommand("path", "path 03 1")).toEqual({ error: 'expected "path R C"' });
    expect(parseCellCommand("push", "path 1 1")).toEqual({ error: 'expected "push R C"' });
    expect(badToolCall("R C is a wall")).toEqual({
      output: "bad command: R C is a wall",
      moves: null,
      bad: true,
    });
  });
});
