/**
 * Vitest globalSetup: a real S3 server for the suite — Ceph's RADOS gateway on 127.0.0.1 — from
 * tools/ceph/start-rgw.sh. There is one per machine, shared by every suite and checkout that runs
 * at the same time: the script starts it under a lock (or reuses it when it is up and healthy) and
 * records this vitest process as a user; at the end `stop-rgw.sh --user <pid>` stops it only when
 * no other live user is left. Tests get the endpoint and keys with `inject("s3")`, and keep to their
 * own key prefixes, since another suite may share the bucket.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type {} from "vitest";
import type { TestProject } from "vitest/node";

export interface S3TestServer {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    s3: S3TestServer;
  }
}

const run = promisify(execFile);
const tools = fileURLToPath(new URL("../../../tools/ceph/", import.meta.url));
const user = String(process.pid);

export default async function setup(project: TestProject) {
  let stdout: string;
  try {
    // Up to 300 s waiting for another suite's cold start (the lock), then ≈15 s for our own.
    ({ stdout } = await run("bash", [`${tools}start-rgw.sh`, "--user", user], { timeout: 420_000 }));
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`could not start Ceph RGW for the S3 tests: ${e.stderr?.trim() || e.message}`);
  }
  const server = JSON.parse(stdout.trim().split("\n").at(-1)!) as S3TestServer;
  project.provide("s3", server);
  return async () => {
    await run("bash", [`${tools}stop-rgw.sh`, "--user", user]).catch(() => {});
  };
}
