export * from "./app.ts";
export * from "./auth.ts";
export * from "./context.ts";
export * from "./deadline.ts";
export * from "./errors.ts";
export * from "./rate-limit.ts";
export * from "./schemas.ts";
