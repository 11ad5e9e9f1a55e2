/**
 * @troupe/teams — published teams: versioned manifests and artifacts in an ObjectStore, inference
 * backends, and `solve()` for serving. This entry runs on Node and on Workers (no onnxruntime, no
 * node: modules of its own); the embedded ONNX backend is `@troupe/teams/onnx`.
 */
export * from "./aliases.ts";
export * from "./answer.ts";
export * from "./artifacts.ts";
export * from "./backend.ts";
export * from "./input.ts";
export * from "./layout.ts";
export * from "./load-team.ts";
export * from "./manifest.ts";
export * from "./openai-backend.ts";
export * from "./publish.ts";
export * from "./registry.ts";
export * from "./sandbox.ts";
export * from "./solve.ts";
export * from "./team-files.ts";
export * from "./versions.ts";
