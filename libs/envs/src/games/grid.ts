/**
 * Grid vocabulary shared by the grid games (Plan-Path, Sokoban): positions, the four moves and
 * the parser that turns an agent's text into moves.
 */

/** A cell as [row, col], 0-based, row 0 at the top. */
export type Pos = readonly [number, number];

export type Direction = "U" | "D" | "L" | "R";

/** Move order used everywhere a solver breaks ties (so solutions are deterministic). */
export const DIRECTIONS: readonly Direction[] = ["U", "D", "L", "R"];

export const DELTA: Readonly<Record<Direction, Pos>> = { U: [-1, 0], D: [1, 0], L: [0, -1], R: [0, 1] };

export function step(pos: Pos, direction: Direction): Pos {
  const [dr, dc] = DELTA[direction];
  return [pos[0] + dr, pos[1] + dc];
}

export function samePos(a: Pos, b: Pos): boolean {
  return a[0] === b[0] && a[1] === b[1];
}

/** `(row,col)`, the way reports name cells. */
export function formatPos(pos: Pos): string {
  return `(${pos[0]},${pos[1]})`;
}

/**
 * The answer part of an agent's text: what follows the last `####` if there is one (the tool-role
 * protocol), else the whole text (the compact protocol); then its first non-empty line.
 */
export function answerText(text: string): string {
  const marker = text.lastIndexOf("####");
  const answer = marker >= 0 ? text.slice(marker + 4) : text;
  return answer.split("\n").find((line) => line.trim() !== "") ?? "";
}

const WORD_TO_LETTER: Readonly<Record<string, Direction>> = { up: "U", down: "D", left: "L", right: "R" };

/**
 * Moves from an agent's text: letters U/D/L/R (any case), optionally separated by spaces, commas
 * or quotes, or written as JSON-ish lists (`["U", "R"]`) or words (`up right`). Any other
 * character makes the whole plan unreadable (null): guessing at a garbled plan would reward noise.
 */
export function parseDirections(text: string): Direction[] | null {
  const answer = answerText(text)
    .replace(/\b(up|down|left|right)\b/gi, (word) => WORD_TO_LETTER[word.toLowerCase()]!)
    .replace(/[\s,;'"`[\]().]/g, "")
    .toUpperCase();
  if (answer === "" || !/^[UDLR]+$/.test(answer)) return null;
  return answer.split("") as Direction[];
}

/** Breadth-first distances from `source` over cells where `open(row, col)` holds; -1 = unreachable. */
export function bfsDistances(
  rows: number,
  cols: number,
  open: (row: number, col: number) => boolean,
  source: Pos,
): Int32Array {
  const dist = new Int32Array(rows * cols).fill(-1);
  if (!open(source[0], source[1])) return dist;
  const queue = new Int32Array(rows * cols);
  let head = 0;
  let tail = 0;
  const start = source[0] * cols + source[1];
  dist[start] = 0;
  queue[tail++] = start;
  while (head < tail) {
    const cell = queue[head++]!;
    const r = Math.floor(cell / cols);
    const c = cell % cols;
    for (const d of DIRECTIONS) {
      const nr = r + DELTA[d][0];
      const nc = c + DELTA[d][1];
      if (nr < 0 || nr >= rows || nc < 0 || nc >= cols || !open(nr, nc)) continue;
      const next = nr * cols + nc;
      if (dist[next] !== -1) continue;
      dist[next] = dist[cell]! + 1;
      queue[tail++] = next;
    }
  }
  return dist;
}

/**
 * A shortest path from `from` down a BFS distance field (`bfsDistances` from the target), ties
 * broken in U, D, L, R order; null when `from` cannot reach the target.
 */
export function descendPath(rows: number, cols: number, dist: Int32Array, from: Pos): Direction[] | null {
  let d = dist[from[0] * cols + from[1]]!;
  if (d < 0) return null;
  const path: Direction[] = [];
  let pos = from;
  while (d > 0) {
    const dir = DIRECTIONS.find((m) => {
      const [r, c] = step(pos, m);
      return r >= 0 && r < rows && c >= 0 && c < cols && dist[r * cols + c] === d - 1;
    })!;
    path.push(dir);
    pos = step(pos, dir);
    d--;
  }
  return path;
}
