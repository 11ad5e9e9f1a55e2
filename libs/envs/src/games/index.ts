export * from "./entry.ts";
export * from "./episode.ts";
export * from "./game.ts";
export * from "./grid.ts";
export * from "./plan-path.ts";
export * from "./sokoban.ts";
export * from "./splits.ts";
export * from "./sudoku.ts";
