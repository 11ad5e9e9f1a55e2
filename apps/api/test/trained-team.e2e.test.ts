/**
 * End to end, as a user runs it, each step a separate process: the default recipe (shrunk to a
 * tiny model and two steps) trained by the trainer's CLI into a temp store, published with
 * `trainer publish`, served by this app's Node entry (src/node.ts, port 0, an API key), asked to
 * solve over HTTP, then stopped with SIGTERM.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/auth.ts";
import { startApi, trainAndPublish } from "./processes.ts";

const root = mkdtempSync(join(tmpdir(), "troupe-api-e2e-"));
const store = `file://${join(root, "store")}`;
let server: ChildProcess | undefined;
afterAll(() => {
  server?.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

/** The default recipe, tiny: one 32-wide layer, a 2-step warm start and 2 RL steps. */
const SHRINK = {
  "train.steps": 2,
  "train.tasksPerStep": 2,
  "train.evalEvery": 0,
  "train.evalTasks": 4,
  "sft.steps": 2,
  "sft.batchSize": 8,
  "model.hidden_size": 32,
  "model.intermediate_size": 64,
  "model.num_hidden_layers": 1,
  "model.num_attention_heads": 2,
  "model.num_key_value_heads": 1,
  "strategy.candidates": 2,
};

describe("a team trained by the default run, published and served", () => {
  it("trains, publishes, and answers POST /v1/solve over HTTP (Node)", async () => {
    const sets = Object.entries(SHRINK).map(([k, v]) => `${k}=${v}`);
    await trainAndPublish({
      recipe: "default",
      run: "e2e",
      name: "planpath",
      store,
      sets,
      timeoutMs: 60_000,
    });

    const key = "e2e-key-0123456789";
    const api = startApi(["--port", "0", "--store", store], { TROUPE_API_KEY_HASHES: await sha256Hex(key) });
    server = api.child;
    const url = await api.listening;
    const solve = (body: unknown, auth = `Bearer ${key}`) =>
      fetch(`${url}/v1/solve`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: auth },
        body: JSON.stringify(body),
      });

    expect((await solve({ team: "planpath", input: { generate: { seed: 1 } } }, "Bearer wrong")).status).toBe(
      401,
    );
    const res = await solve({ team: "planpath", input: { generate: { seed: 1 } }, options: { seed: 2 } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.team).toEqual({ name: "planpath", version: 1 });
    expect(body.task.payload).toMatchObject({ rows: 6, cols: 6 }); // the default recipe's grids
    expect(body.turns.length).toBeGreaterThan(0);
    expect(new Set(body.turns.map((t: { role: string }) => t.role))).toEqual(new Set(["planner", "fixer"]));
    expect(typeof body.solved === "boolean").toBe(true);

    const manifest = await (
      await fetch(`${url}/v1/teams/planpath`, { headers: { authorization: `Bearer ${key}` } })
    ).json();
    expect(manifest.source).toMatchObject({ runId: "e2e", step: 1 });
    expect(manifest.eval).toMatchObject({ tasks: 4 });

    // SIGTERM: a graceful stop, exit code 0.
    const exited = new Promise<number | null>((done) => server!.once("exit", (code) => done(code)));
    server!.kill("SIGTERM");
    expect(await exited).toBe(0);
    server = undefined;
  }, 60_000);
});
