/** The grid payload schema, declared once for Plan-Path and Sokoban with each game's cell encoding. */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  gridPayloadSchema,
  PLAN_PATH_CELLS,
  PosSchema,
  SOKOBAN_CELLS,
} from "../../src/games/grid-payload.ts";
import { puzzle as planPath } from "./hand-4x4.ts";
import { oneBox } from "./hand-puzzles.ts";

const firstIssue = (schema: z.ZodType, value: unknown) => {
  const issue = schema.safeParse(value).error?.issues[0];
  return issue && `${issue.path.join(".")}: ${issue.message}`;
};

describe("gridPayloadSchema", () => {
  const paths = gridPayloadSchema({
    title: "Plan-Path",
    cells: PLAN_PATH_CELLS,
    minSize: 1,
    maxSize: 4,
    positions: { start: PosSchema, goal: PosSchema },
  });
  const rooms = gridPayloadSchema({
    title: "Sokoban",
    cells: SOKOBAN_CELLS,
    minSize: 3,
    maxSize: 6,
    positions: { targets: z.array(PosSchema), boxes: z.array(PosSchema), player: PosSchema },
  });

  it("accepts each game's own encoding", () => {
    expect(paths.safeParse(planPath).success).toBe(true);
    expect(rooms.safeParse(oneBox).success).toBe(true);
    expect(firstIssue(paths, { ...planPath, grid: oneBox.walls.slice(0, 4).map((r) => r.slice(0, 4)) })).toBe(
      "grid.1: grid rows use only '.' and '#'",
    );
  });

  it("bounds the size, naming the game", () => {
    expect(firstIssue(paths, { ...planPath, rows: 5 })).toBe(
      "rows: at most 4: the largest grid Plan-Path accepts is 4×4",
    );
    expect(firstIssue(rooms, { ...oneBox, walls: [...oneBox.walls, "______"] })).toBe(
      "walls: a board has at most 6 rows",
    );
    expect(firstIssue(rooms, { ...oneBox, walls: oneBox.walls.map((r) => `${r}_`) })).toBe(
      "walls.0: a board row has at most 6 cells",
    );
  });

  it("rows and columns agree with the board; every position stands on an open cell", () => {
    expect(firstIssue(paths, { ...planPath, cols: 3 })).toBe("grid.0: needs 3 columns");
    expect(firstIssue(paths, { ...planPath, goal: [0, 2] })).toBe("goal: must be a free cell");
    expect(firstIssue(rooms, { ...oneBox, boxes: [[0, 0]] })).toBe("boxes.0: must be on floor");
    expect(firstIssue(rooms, { ...oneBox, player: [2, 5] })).toBe("player: must be on floor");
  });
});
