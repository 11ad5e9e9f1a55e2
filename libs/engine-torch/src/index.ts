export * from "./chat.ts";
export * from "./engine.ts";
export * from "./protocol.ts";
export * from "./worker-process.ts";
