/**
 * The task payload of a grid game (Plan-Path, Sokoban), declared once: `rows`, `cols`, the board
 * as one string per row in the game's cell encoding, the optimal plan's length, and the game's
 * positions, each of which must stand on an open cell. Sizes are bounded (the prompt shows every
 * cell, and the solver that checks `optimal` searches the board).
 *
 * The two encodings are the games' own, kept because published teams were trained on them:
 * Plan-Path writes `.` free and `#` blocked (its picture adds `A` and `G`); Sokoban writes `_` floor
 * and `#` wall, since its picture (XSB symbols) uses `.` for a target.
 */
import { z } from "zod";
import type { Pos } from "./grid.ts";

/** A cell as [row, col] (grid.ts `Pos`). */
export const PosSchema = z.tuple([z.number().int(), z.number().int()]).readonly();

export interface CellEncoding<Field extends string = string> {
  /** The payload field holding the rows (`grid`, `walls`). */
  readonly field: Field;
  /** What errors call the board (`grid`, `board`). */
  readonly noun: string;
  readonly open: string;
  readonly blocked: string;
  /** What a position off an open cell is told: `must be <onOpen>`. */
  readonly onOpen: string;
}

export const PLAN_PATH_CELLS: CellEncoding<"grid"> = {
  field: "grid",
  noun: "grid",
  open: ".",
  blocked: "#",
  onOpen: "a free cell",
};
export const SOKOBAN_CELLS: CellEncoding<"walls"> = {
  field: "walls",
  noun: "board",
  open: "_",
  blocked: "#",
  onOpen: "on floor",
};

export interface GridPayloadSpec<Field extends string, Positions extends z.ZodRawShape> {
  /** The game's title, for the size error (`the largest grid Plan-Path accepts is 32×32`). */
  readonly title: string;
  readonly cells: CellEncoding<Field>;
  readonly minSize: number;
  readonly maxSize: number;
  /** Most moves `optimal` may be (default: no bound). */
  readonly maxOptimal?: number;
  /** The game's positions: a `PosSchema`, or an array of them. */
  readonly positions: Positions;
}

/** Every position of a payload with its path: `player` → [["player"], pos]; `boxes` → [["boxes", i], pos]. */
function positionsOf(
  payload: Record<string, unknown>,
  fields: readonly string[],
): [(string | number)[], Pos][] {
  return fields.flatMap((field) => {
    const value = payload[field] as Pos | Pos[];
    if (typeof value[0] === "number") return [[[field], value as Pos]];
    return (value as Pos[]).map((pos, i): [(string | number)[], Pos] => [[field, i], pos]);
  });
}

/** The rows, columns, board rows and optimal length every grid payload has. */
type GridShape<Field extends string> = {
  rows: z.ZodNumber;
  cols: z.ZodNumber;
  optimal: z.ZodNumber;
} & Record<Field, z.ZodArray<z.ZodString>>;

export function gridPayloadSchema<Field extends string, Positions extends z.ZodRawShape>(
  spec: GridPayloadSpec<Field, Positions>,
) {
  const { cells, maxSize: max, title } = spec;
  const tooBig = `at most ${max}: the largest ${cells.noun} ${title} accepts is ${max}×${max}`;
  const size = z.number().int().min(spec.minSize).max(max, tooBig);
  const optimal = z.number().int().min(0);
  const rowAlphabet = new RegExp(`^[${cells.open}${cells.blocked}]+$`);
  const shape = {
    rows: size,
    cols: size,
    [cells.field]: z
      .array(
        z
          .string()
          .max(max, `a ${cells.noun} row has at most ${max} cells`)
          .regex(rowAlphabet, `${cells.noun} rows use only '${cells.open}' and '${cells.blocked}'`),
      )
      .max(max, `a ${cells.noun} has at most ${max} rows`)
      .readonly(),
    optimal: spec.maxOptimal === undefined ? optimal : optimal.max(spec.maxOptimal),
  } as GridShape<Field>;
  return z.object({ ...shape, ...spec.positions }).superRefine((payload, ctx) => {
    const p = payload as Record<string, unknown> & { rows: number; cols: number };
    const board = p[cells.field] as string[];
    if (board.length !== p.rows)
      ctx.addIssue({ code: "custom", path: [cells.field], message: `needs ${p.rows} rows` });
    board.forEach((row, r) => {
      if (row.length !== p.cols)
        ctx.addIssue({ code: "custom", path: [cells.field, r], message: `needs ${p.cols} columns` });
    });
    for (const [path, [r, c]] of positionsOf(p, Object.keys(spec.positions))) {
      if (board[r]?.[c] !== cells.open)
        ctx.addIssue({ code: "custom", path, message: `must be ${cells.onOpen}` });
    }
  });
}
