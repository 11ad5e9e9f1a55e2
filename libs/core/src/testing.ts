/**
 * Fixtures for tests, demos and docs, outside the public index so that no runtime code builds on
 * them: a scripted policy (rules instead of weights) and the tiny Sum-to-target environment.
 * Import them as `@troupe/core/testing`.
 */
export * from "./scripted-policy.ts";
export * from "./toy.ts";
