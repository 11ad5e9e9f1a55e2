export * from "./coding/index.ts";
export * from "./games/index.ts";
export * from "./math/index.ts";
export * from "./registry.ts";
export * from "./writing/index.ts";
