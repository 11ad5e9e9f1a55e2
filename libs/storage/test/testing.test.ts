/**
 * The ObjectStore contract suite itself: every promise it checks is one a store of the interface
 * and nothing more can keep (a Map, without `listFolders`, so that case is skipped as the option
 * says). FileStore and S3Store run it in their own files; apps/api's R2Store runs it too.
 */
import { objectStoreContract } from "../src/testing.ts";
import { memoryStore } from "./memory-store.ts";

objectStoreContract("a Map (the interface alone)", () => memoryStore(), { listFolders: false });
