/**
 * The service's process spoken to directly over its IPC channel: `ready` with the isolation, a run's
 * `result` under its id, an invalid request's `error` line, `unavailable` with the reason when its
 * sandbox cannot be made, and its exit when the parent disconnects.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";
import type { ServiceReply } from "../src/service.ts";

const entry = fileURLToPath(new URL("../src/service-process.ts", import.meta.url));

function start(options: object): { child: ChildProcess; next: () => Promise<ServiceReply> } {
  const child = fork(entry, [JSON.stringify(options)], {
    execArgv: ["--import", "tsx"],
    serialization: "advanced",
    stdio: ["ignore", "ignore", "ignore", "ipc"],
  });
  const queue: ServiceReply[] = [];
  const waiting: ((reply: ServiceReply) => void)[] = [];
  child.on("message", (reply: ServiceReply) => {
    const take = waiting.shift();
    if (take) take(reply);
    else queue.push(reply);
  });
  const next = () =>
    new Promise<ServiceReply>((resolve) => {
      const queued = queue.shift();
      if (queued) resolve(queued);
      else waiting.push(resolve);
    });
  return { child, next };
}

test("ready, then each run answered under its id; an invalid request is an error line", async () => {
  const { child, next } = start({});
  try {
    expect(await next()).toEqual({ op: "ready", isolation: "bubblewrap" });
    child.send({ op: "run", id: 7, request: { language: "python", code: "print(2**10)" } });
    expect(await next()).toMatchObject({ op: "result", id: 7, result: { status: "ok", stdout: "1024\n" } });
    child.send({ op: "run", id: 8, request: { language: "python", code: "1", limits: { cpuSeconds: 0 } } });
    const error = await next();
    expect(error).toMatchObject({ op: "error", id: 8 });
    expect((error as { message: string }).message).toMatch(/cpuSeconds/);
  } finally {
    child.kill("SIGKILL");
  }
});

test("unavailable with the reason when bubblewrap cannot run", async () => {
  const { child, next } = start({ bwrap: "/nonexistent/bwrap" });
  const reply = await next();
  child.kill("SIGKILL");
  expect(reply.op).toBe("unavailable");
  expect((reply as { reason: string }).reason).toContain("/nonexistent/bwrap");
});

test("exits when its parent disconnects", async () => {
  const { child, next } = start({});
  await next();
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  child.disconnect();
  expect(await exited).toBe(0);
});
