/** @troupe/eval: held-out evaluation reports, the regression gate and the nightly job, as a library. */
export * from "./evaluate.ts";
export * from "./gate.ts";
export * from "./nightly.ts";
export * from "./render.ts";
export * from "./run.ts";
export * from "./schema.ts";
export * from "./store.ts";
export * from "./subjects.ts";
export * from "./suite.ts";
