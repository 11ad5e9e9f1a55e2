// The Node entry ("@troupe/storage/node"): the core, plus the stores that need Node — a local
// folder (node:fs) and S3 through the AWS SDK — and openStore, which picks one from a URI.
export * from "./file-store.ts";
export * from "./index.ts";
export * from "./open-store.ts";
export * from "./s3-store.ts";
