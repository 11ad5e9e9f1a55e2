/**
 * The workspace's programs as separate processes, run from their TypeScript sources as a user
 * runs them in this checkout: this app's Node entry (src/node.ts) and the trainer's CLI
 * (apps/trainer/src/main.ts, for the end-to-end tests that train and publish a team).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect } from "vitest";

export const workspaceRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
/** Node runs the workspace's .ts sources through tsx, resolving packages to their sources. */
const NODE_ARGS = ["--conditions=@troupe/source", "--import", "tsx"];

/**
 * Starts src/node.ts with `args` (e.g. `--port 0`) and `env` on top of this process's environment
 * (of this checkout, or of `checkout`, another one: the bench's before/after).
 * `listening` resolves with its URL once it logs "listening", and rejects if it exits first; the
 * process is there at once, for the caller to stop however the start ends.
 */
export function startApi(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  checkout = workspaceRoot,
): { child: ChildProcess; listening: Promise<string> } {
  const child = spawn(process.execPath, [...NODE_ARGS, join(checkout, "apps/api/src/node.ts"), ...args], {
    cwd: checkout,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const listening = new Promise<string>((ready, fail) => {
    let log = "";
    child.stderr!.on("data", (chunk) => {
      log += chunk.toString();
      const line = log.split("\n").find((l) => l.includes('"listening"'));
      if (line) ready(JSON.parse(line).url);
    });
    child.once("exit", (code) => fail(new Error(`api exited with ${code}: ${log}`)));
  });
  return { child, listening };
}

/** Runs the trainer's CLI with `args`; resolves with its stdout. */
async function trainer(args: readonly string[], timeoutMs: number): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...NODE_ARGS, join(workspaceRoot, "apps/trainer/src/main.ts"), ...args],
    { cwd: workspaceRoot, timeout: timeoutMs },
  );
  return stdout;
}

/**
 * `trainer train --recipe <recipe> --run <run> --set store=<store> --set <each of sets>`, then
 * `trainer publish --run <run> --name <name> --store <store>`; expects the first to report the run
 * finished and the second to have published version 1 of the team from the run's step 1.
 */
export async function trainAndPublish(options: {
  readonly recipe: string;
  readonly run: string;
  readonly name: string;
  readonly store: string;
  /** `key=value` overrides of the recipe. */
  readonly sets: readonly string[];
  /** Each command's limit. */
  readonly timeoutMs: number;
}): Promise<void> {
  const { recipe, run, name, store, sets, timeoutMs } = options;
  const trained = await trainer(
    [
      "train",
      "--recipe",
      recipe,
      "--run",
      run,
      "--set",
      `store=${store}`,
      ...sets.flatMap((s) => ["--set", s]),
    ],
    timeoutMs,
  );
  expect(trained).toContain(`run ${run}: finished`);
  const published = await trainer(["publish", "--run", run, "--name", name, "--store", store], timeoutMs);
  expect(published).toContain(`published ${name}@1 (run ${run}, step 1)`);
}
