export * from "./dataset.ts";
export * from "./entry.ts";
export * from "./rewards.ts";
export * from "./text-stats.ts";
export * from "./writing-env.ts";
