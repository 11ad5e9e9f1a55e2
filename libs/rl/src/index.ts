export * from "./advantages.ts";
export * from "./atgrpo.ts";
export * from "./grouping.ts";
export * from "./loss.ts";
export * from "./magrpo.ts";
export * from "./parallel.ts";
export * from "./rollout.ts";
