export * from "./answer.ts";
export * from "./dataset.ts";
export * from "./entry.ts";
export * from "./reasoner-tool-env.ts";
