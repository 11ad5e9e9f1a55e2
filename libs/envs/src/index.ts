export * from "./answer.ts";
export * from "./baselines.ts";
export * from "./coding/index.ts";
export * from "./entry.ts";
export * from "./games/index.ts";
export * from "./math/index.ts";
export * from "./registry.ts";
export * from "./writing/index.ts";
