/**
 * The worker as a child process. Without torch, "python" executables that are shell scripts show
 * how start-up failures surface: no interpreter, an early exit with its stderr, a stray print on
 * stdout, no hello in time. With Debian's torch, the real worker: a handshake with another protocol
 * version is refused naming both; the worker dies with its controller: a controller process killed
 * with SIGKILL (so none of its own cleanup runs) takes its worker with it — PR_SET_PDEATHSIG, or the
 * worker's poll of the controller's pid — instead of leaving a process holding GPU memory; and a
 * 100 MB reply crosses the pipe intact.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { TorchWorkerError, TorchWorkerExited, WorkerProcess } from "../src/worker-process.ts";
import { checkPattern, MB } from "./fixtures/echo-pattern.ts";
import { PYTHON, TEST_WORKER, torchAvailable } from "./torch-available.ts";

/** Running and not a zombie (a reaped-late child of a dead parent still has a /proc entry). */
function running(pid: number): boolean {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return !/^State:\s+Z/m.test(status);
  } catch {
    return false;
  }
}

describe.skipIf(!torchAvailable || process.platform !== "linux")("worker lifetime", () => {
  it("exits when its controller is SIGKILLed", async () => {
    const controller = spawn(
      process.execPath,
      [
        "--conditions=@troupe/source",
        "--import",
        "tsx",
        fileURLToPath(new URL("fixtures/controller.ts", import.meta.url)),
      ],
      { env: { ...process.env, TROUPE_PYTHON: PYTHON }, stdio: ["ignore", "pipe", "inherit"] },
    );
    const workerPid = await new Promise<number>((resolve, reject) => {
      let out = "";
      controller.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const m = /worker (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      controller.on("exit", (code) => reject(new Error(`controller exited early (${code})`)));
    });
    expect(running(workerPid)).toBe(true);
    controller.kill("SIGKILL");
    const deadline = Date.now() + 15_000;
    while (running(workerPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(running(workerPid)).toBe(false);
  }, 60_000);
});

describe.skipIf(!torchAvailable)("large frames from the worker", () => {
  it("a 100 MB reply crosses the pipe intact", async () => {
    const worker = await WorkerProcess.start(TEST_WORKER);
    try {
      const time = async (size: number) => {
        const started = performance.now();
        const reply = await worker.request("echo", { bytes: size });
        const ms = performance.now() - started;
        const pattern = reply.payloads.get("pattern") as Uint8Array;
        expect(pattern.length).toBe(size);
        checkPattern(pattern);
        return ms;
      };
      await time(1 * MB); // warm-up
      const small = await time(10 * MB);
      const large = await time(100 * MB);
      // reported, not asserted: a clock on a shared machine is no test (the reader's linearity is
      // checked above on the bytes it copies)
      console.log(`echo through the pipe: 10 MB ${small.toFixed(0)} ms, 100 MB ${large.toFixed(0)} ms`);
    } finally {
      await worker.close();
    }
  }, 300_000);
});

describe("start-up failures (a shell script in place of python)", () => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-fake-python-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  /** An executable that ignores `-m troupe_worker …` and runs this shell code instead. */
  const fakePython = (name: string, code: string): string => {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/sh\n${code}\n`);
    chmodSync(path, 0o755);
    return path;
  };

  it("names an interpreter that cannot be started", async () => {
    await expect(WorkerProcess.start({ python: join(dir, "missing-python") })).rejects.toThrow(
      new TorchWorkerExited(
        `torch worker: cannot start ${join(dir, "missing-python")}: spawn ${join(dir, "missing-python")} ENOENT`,
      ),
    );
  });

  it("reports an early exit with its code and the end of its stderr", async () => {
    const python = fakePython("exits", 'echo "No module named troupe_worker" >&2\nexit 3');
    const error = await WorkerProcess.start({ python }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TorchWorkerExited);
    expect((error as Error).message).toBe(
      "torch worker exited (code 3); its stderr ends with:\nNo module named troupe_worker\n",
    );
  });

  it("refuses a stdout that is not frames (a stray print) and kills the process", async () => {
    const python = fakePython("prints", 'echo "Loading checkpoint shards: 100%"\nexec sleep 30');
    const started = performance.now();
    await expect(WorkerProcess.start({ python })).rejects.toThrow(/bad frame magic "Load"/);
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it("gives up when no hello comes within the start-up timeout", async () => {
    const python = fakePython("silent", "exec sleep 30");
    await expect(WorkerProcess.start({ python, startupTimeoutMs: 200 })).rejects.toThrow(
      "torch worker: no hello within 200 ms",
    );
  });

  it("a Python exception carries its type and traceback into the message", () => {
    const error = new TorchWorkerError("logprobs", "ValueError", "bad id", "Traceback …\n  File engine.py");
    expect(error.message).toBe(
      "torch worker: logprobs: ValueError: bad id\n--- Python traceback ---\nTraceback …\n  File engine.py",
    );
    expect([error.name, error.op, error.pythonType]).toEqual(["TorchWorkerError", "logprobs", "ValueError"]);
  });
});

describe.skipIf(!torchAvailable)("handshake", () => {
  it("refuses a worker that speaks another protocol version, naming both", async () => {
    const worker = await WorkerProcess.start(TEST_WORKER);
    await expect(worker.request("hello", { protocol: 99 })).rejects.toThrow(
      /protocol version mismatch: the controller speaks v99, this worker v1/,
    );
    await worker.close();
  }, 60_000);
});
