/**
 * TEST-ONLY CodeRunner: plain `python3` in a temporary directory with a wall-clock timeout.
 * NO isolation (no bubblewrap, no rlimits beyond the timeout). It exists so the environments'
 * logic can be tested before/without `@troupe/sandbox`'s `createSandbox`; the tests prefer the
 * real sandbox when it is available (see `testRunner`). Never use this outside tests.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  type CodeRunner,
  type ConnectedRunner,
  isConnectedRunner,
  type RunRequest,
  type RunResult,
} from "@troupe/sandbox";

const DEFAULT_WALL_MS = 10_000;
const DEFAULT_OUTPUT_BYTES = 1 << 20;

export class LocalPythonRunner implements CodeRunner {
  async run(request: RunRequest): Promise<RunResult> {
    const dir = await mkdtemp(join(tmpdir(), "troupe-envs-test-"));
    try {
      for (const [name, content] of Object.entries(request.files ?? {})) {
        const path = join(dir, name);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, content);
      }
      let argv: readonly string[];
      if (request.language === "python") {
        await writeFile(join(dir, "main.py"), request.code ?? "");
        argv = ["python3", "-I", "main.py"];
      } else {
        argv = request.argv ?? [];
      }
      return await execute(argv, dir, request);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

function execute(argv: readonly string[], cwd: string, request: RunRequest): Promise<RunResult> {
  const wallMs = request.limits?.wallMs ?? DEFAULT_WALL_MS;
  const outputBytes = request.limits?.outputBytes ?? DEFAULT_OUTPUT_BYTES;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, stdio: ["pipe", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    let truncated = false;
    let timedOut = false;
    const keep = (acc: string, chunk: Buffer) => {
      const next = acc + chunk.toString("utf8");
      if (next.length > outputBytes) {
        truncated = true;
        return next.slice(0, outputBytes);
      }
      return next;
    };
    child.stdout.on("data", (c: Buffer) => (stdout = keep(stdout, c)));
    child.stderr.on("data", (c: Buffer) => (stderr = keep(stderr, c)));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, wallMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({
        status: timedOut ? "timeout" : code === 0 ? "ok" : signal ? "killed" : "error",
        exitCode: code,
        signal,
        stdout,
        stderr,
        truncated,
        wallMs: performance.now() - started,
        isolation: "unsafe-rlimits",
      });
    });
    child.stdin.end(request.stdin ?? "");
  });
}

/**
 * The runner the tests use: `createSandbox` from `@troupe/sandbox` when it can run Python here;
 * else the same sandbox in its explicit rlimits-only mode (still a `ConnectedRunner`, which the
 * coding harness needs: the program and the checker run as two connected processes); only when
 * neither works, the test-only `LocalPythonRunner` (enough for environments that use `run`).
 */
export async function testRunner(): Promise<{ runner: CodeRunner; kind: string }> {
  const sandbox = (await import("@troupe/sandbox")) as Record<string, unknown>;
  const create = sandbox.createSandbox as
    | ((options?: unknown) => CodeRunner | Promise<CodeRunner>)
    | undefined;
  if (typeof create === "function") {
    for (const [options, kind] of [
      [{}, "sandbox"],
      [{ unsafe: true }, "sandbox (unsafe rlimits only, test fallback)"],
    ] as const) {
      try {
        const runner = await create(options);
        const probe = await runner.run({ language: "python", code: "print(6 * 7)" });
        if (probe.status === "ok" && probe.stdout.trim() === "42") return { runner, kind };
      } catch {
        // try the next
      }
    }
  }
  return { runner: new LocalPythonRunner(), kind: "local-python (test-only)" };
}

/**
 * `runner` with a count of the sandbox calls made through it (plain and connected runs alike),
 * for tests that check what a step or a job ran; `reset()` starts the count again.
 */
export function countingRunner(runner: CodeRunner): { runner: CodeRunner; calls(): number; reset(): void } {
  let calls = 0;
  const counted: CodeRunner = {
    run: (request) => {
      calls++;
      return runner.run(request);
    },
  };
  if (isConnectedRunner(runner)) {
    (counted as ConnectedRunner).runConnected = (requests, talk) => {
      calls++;
      return runner.runConnected(requests, talk);
    };
  }
  return { runner: counted, calls: () => calls, reset: () => void (calls = 0) };
}
