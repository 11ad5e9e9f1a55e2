// The runtime-neutral core: the ObjectStore interface, the layout, the manifest-last commit
// protocol and its checksums, the shard codec, runs and the rollout queue. No node: module is
// reachable from here, so Workers code imports it as is; the file store, the S3 client and
// openStore are in "@troupe/storage/node" (src/node.ts).
export * from "./checksum.ts";
export * from "./layout.ts";
export * from "./manifest.ts";
export * from "./object-store.ts";
export * from "./retry.ts";
export * from "./rollout-queue.ts";
export * from "./run-store.ts";
export * from "./shard-format.ts";
export * from "./store-check.ts";
