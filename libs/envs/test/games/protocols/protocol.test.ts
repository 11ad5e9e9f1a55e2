/** The step machinery every protocol shares: a plan committed to the draft, a plan's progress. */
import { describe, expect, it } from "vitest";
import {
  commitPlan,
  type Draft,
  invalidPlanReward,
  parseEpisodeOptions,
  planProgressFrom,
  type SokobanBoard,
  SokobanRewardsSchema,
  sokobanGame,
} from "../../../src/games/index.ts";
import { oneBox } from "../hand-puzzles.ts";

const game = sokobanGame(SokobanRewardsSchema.parse({}));
const options = parseEpisodeOptions("sokoban", {});
const draftAt = (board: SokobanBoard, movesTaken = 0): Draft<SokobanBoard> => ({
  board,
  movesTaken,
  solved: false,
  report: null,
  toolOutput: null,
  team: 0,
  local: {},
  info: {},
});
const start = { player: oneBox.player, boxes: oneBox.boxes };

describe("commitPlan", () => {
  it("an optimal plan: step costs, the box on target, solved and the optimal bonus; progress 1", () => {
    const draft = draftAt(start);
    commitPlan({ game, options, puzzle: oneBox, draft }, "planner", "DRURD");
    expect(draft.team).toBeCloseTo(5 * -0.01 + 0.1 + 1 + 0.5, 12);
    expect(draft).toMatchObject({
      solved: true,
      movesTaken: 5,
      report: "DRURD: solved",
      local: { planner: 1 },
    });
    expect(draft.info.planner).toEqual({ readable: true, executed: 5, invalid: null, solved: true });
  });

  it("an unreadable plan: the invalid penalty, nothing moves", () => {
    const draft = draftAt(start);
    commitPlan({ game, options, puzzle: oneBox, draft }, "fixer", "go right");
    expect(draft).toMatchObject({
      board: start,
      team: -0.1,
      report: "unreadable plan",
      local: { fixer: -0.1 },
    });
  });

  it("a plan into a wall stops there; no optimal bonus after extra moves", () => {
    const draft = draftAt(start);
    commitPlan({ game, options, puzzle: oneBox, draft }, "planner", "UR");
    expect(draft.report).toBe("UR: wall at step 1 (1,1)");
    expect(draft.team).toBeCloseTo(-0.1, 12);
    expect(draft.local.planner).toBeCloseTo(-0.1, 12);
  });
});

describe("a plan's progress", () => {
  it("(h_before − h_after) / h_before plus the invalid penalty, without moving anything", () => {
    expect(planProgressFrom(game, oneBox, start, ["D", "R"], 64)).toBeCloseTo(0.4, 12); // 5 → 3
    expect(planProgressFrom(game, oneBox, start, ["U"], 64)).toBeCloseTo(-0.1, 12);
    expect(invalidPlanReward(-0.1)).toBeCloseTo(-0.1, 12);
  });
});
