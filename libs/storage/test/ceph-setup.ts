/**
 * Vitest globalSetup: a real S3 server for the suite — Ceph's RADOS gateway on 127.0.0.1, started
 * by tools/ceph/start-rgw.sh (≈15 s cold) — or the one already running on that port, which is
 * then left running. Tests get the endpoint and keys with `inject("s3")`.
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
const port = process.env.TROUPE_RGW_PORT ?? "7481";

async function answers(endpoint: string): Promise<boolean> {
  try {
    return (await fetch(endpoint, { signal: AbortSignal.timeout(1000) })).status === 200;
  } catch {
    return false;
  }
}

export default async function setup(project: TestProject) {
  const alreadyRunning = await answers(`http://127.0.0.1:${port}`);
  let stdout: string;
  try {
    ({ stdout } = await run("bash", [`${tools}start-rgw.sh`], { timeout: 120_000 }));
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`could not start Ceph RGW for the S3 tests: ${e.stderr?.trim() || e.message}`);
  }
  const server = JSON.parse(stdout.trim().split("\n").at(-1)!) as S3TestServer;
  project.provide("s3", server);
  return async () => {
    if (!alreadyRunning) await run("bash", [`${tools}stop-rgw.sh`]).catch(() => {});
  };
}
