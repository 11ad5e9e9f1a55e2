/**
 * The worker dies with its controller: a controller process killed with SIGKILL (so none of its
 * own cleanup runs) takes its worker with it — PR_SET_PDEATHSIG, or the worker's poll of the
 * controller's pid — instead of leaving a process holding GPU memory.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { PYTHON, torchAvailable } from "./torch-available.ts";

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
