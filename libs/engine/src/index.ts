export * from "./policy.ts";
export * from "./types.ts";
