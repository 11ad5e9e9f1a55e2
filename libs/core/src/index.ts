export * from "./environment.ts";
export * from "./hash.ts";
export * from "./messages.ts";
export * from "./policy.ts";
export * from "./rng.ts";
export * from "./sample.ts";
export * from "./task.ts";
export * from "./team.ts";
