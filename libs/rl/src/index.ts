export * from "./loss.ts";
