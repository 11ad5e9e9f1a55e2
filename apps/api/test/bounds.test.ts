/**
 * The hostile-testing attacks on the API's bounds, replayed:
 *  - oversized tasks (a 50×150 and a 60×1000 Plan-Path grid, both under the 64 KiB body limit) sent
 *    to the Node server (src/node.ts in a child process, default limits) are refused with 422
 *    naming the field, at once, and the server's peak memory (VmHWM) does not move by more than
 *    the documented bound; before, the first took 21 s and 7 GB and the second answered 500;
 *  - a task the environment accepts whose prompt is longer than the model's context: 422 before
 *    any generation;
 *  - a body sent slowly: 408 once the deadline (counted from the request's arrival) passes.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { createTeamRegistry } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { type Listening, listen, tempStore, tinyTeam } from "./fixtures.ts";
import { startApi } from "./processes.ts";

const tmp = tempStore();
let server: ChildProcess | undefined;
let url: string;

/** docs/serving.md "Limits": the most one refused oversized request may add to the server's peak memory. */
const ATTACK_PEAK_GROWTH_BOUND_MIB = 64;

/** VmHWM (peak resident memory) of a process, in MiB. */
function peakMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmHWM:"))!;
  return Number(/(\d+)/.exec(line)![1]) / 1024;
}

beforeAll(async () => {
  await createTeamRegistry(tmp.store).publish(await tinyTeam("tiny"));
  const api = startApi(["--port", "0", "--store", `file://${tmp.root}`]);
  server = api.child;
  url = await api.listening;
}, 120_000);

afterAll(() => {
  server?.kill("SIGKILL");
  tmp.cleanup();
});

async function solve(input: unknown): Promise<{ status: number; body: { error?: { path?: unknown } } }> {
  const res = await fetch(`${url}/v1/solve`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ team: "tiny", input, options: { seed: 1 } }),
  });
  return { status: res.status, body: await res.json() };
}

/** An open rows×cols grid, start top-left, goal bottom-right: a valid task but for its size. */
function openGrid(rows: number, cols: number) {
  return {
    rows,
    cols,
    grid: Array.from({ length: rows }, () => ".".repeat(cols)),
    start: [0, 0],
    goal: [rows - 1, cols - 1],
    optimal: rows - 1 + cols - 1,
  };
}

describe("oversized tasks (Node server, default limits)", () => {
  it("a 50×150 and a 60×1000 grid: 422 naming the field at once, peak memory within the bound", async () => {
    // Warm up: the team is loaded and one episode has run, so the baseline includes the model.
    expect((await solve({ generate: { seed: 3 } })).status).toBe(200);
    const pid = server!.pid!;
    const before = peakMiB(pid);
    for (const [rows, cols] of [
      [50, 150],
      [60, 1000],
    ] as const) {
      const task = openGrid(rows, cols);
      expect(JSON.stringify(task).length).toBeLessThan(64 * 1024); // under the body limit: the task is the problem
      const started = performance.now();
      const res = await solve({ task });
      const ms = performance.now() - started;
      expect({ rows, cols, status: res.status, path: res.body.error?.path }).toEqual({
        rows,
        cols,
        status: 422,
        path: ["input", "task", "payload", "rows"],
      });
      expect(ms).toBeLessThan(5_000); // the old server took 21.5 s on the first; a refusal is milliseconds
    }
    expect(peakMiB(pid) - before).toBeLessThan(ATTACK_PEAK_GROWTH_BOUND_MIB);
    // The server is still serving.
    expect((await solve({ generate: { seed: 4 } })).status).toBe(200);
  }, 120_000);

  it("a grid the environment accepts but whose prompt is longer than the model's context: 422", async () => {
    // The tiny team's model reads 512 positions; a 30×30 grid is a prompt of about 950 bytes.
    const res = await solve({ task: openGrid(30, 30) });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({
      path: ["input", "task"],
      message: expect.stringMatching(
        /^task: the prompt of agent planner is \d+ tokens, and its model reads at most 512 \(max_position_embeddings of policy planner\)/,
      ),
    });
    // A grid that fits still solves.
    expect((await solve({ task: openGrid(4, 4) })).status).toBe(200);
  }, 60_000);
});

describe("the deadline covers the body upload", () => {
  let app: ReturnType<typeof createApp>;
  let listening: Listening;
  let backend: ReturnType<typeof createOnnxBackend>;
  const DEADLINE_MS = 1_000;
  beforeAll(async () => {
    backend = createOnnxBackend();
    app = createApp({
      registry: createTeamRegistry(tmp.store),
      backend,
      limits: { deadlineMs: DEADLINE_MS },
      log: () => {},
    });
    listening = await listen(app.fetch);
  });
  afterAll(async () => {
    await listening.close();
    await backend.close();
  });

  it("a 100-byte body sent one byte every 200 ms (20 s): 408 request_timeout once the deadline passes", async () => {
    const body = JSON.stringify({ team: "tiny", input: { generate: { seed: 1 } } }).padEnd(100, " ");
    const started = performance.now();
    const answer = await new Promise<string>((done, fail) => {
      let received = "";
      let sent = 0;
      const socket = connect(listening.port, "127.0.0.1", () => {
        socket.write(
          `POST /v1/solve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        );
        const timer = setInterval(() => {
          if (sent < body.length && !socket.destroyed) socket.write(body[sent++]!);
        }, 200);
        socket.on("close", () => clearInterval(timer));
      });
      socket.on("data", (chunk) => {
        received += chunk.toString();
        if (received.includes("\r\n\r\n") && received.includes("}}")) {
          socket.destroy();
          done(received);
        }
      });
      socket.on("error", fail);
    });
    const ms = performance.now() - started;
    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout");
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toEqual({
      error: {
        code: "request_timeout",
        message: expect.stringMatching(/^the request body did not arrive within the deadline of 1000 ms/),
      },
    });
    expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(ms).toBeLessThan(15_000); // long before the 20 s the body would take
    expect(app.stats.byStatus[408]).toBe(1);
  }, 60_000);
});
