export * from "./limits.ts";
export * from "./python-tests.ts";
export * from "./sandbox.ts";
export * from "./service.ts";
export * from "./types.ts";
