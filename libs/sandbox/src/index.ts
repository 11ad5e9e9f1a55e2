export * from "./limits.ts";
export * from "./sandbox.ts";
export * from "./types.ts";
export * from "./python-tests.ts";
