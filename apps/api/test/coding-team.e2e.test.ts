/**
 * A coding team end to end: `magrpo-humaneval` (helper + main; shrunk to a tiny model and two RL
 * steps) trained by the trainer's CLI into a temp store, published with `trainer publish`, then
 * asked over POST /v1/solve by an app that holds a sandbox: the answer is the team's program and
 * the hidden tests' results, run in the sandbox. Without a sandbox the same team is refused (501).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSandbox } from "@troupe/sandbox";
import { FileStore } from "@troupe/storage/node";
import { type CodeAnswer, createTeamRegistry } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { afterAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { trainAndPublish } from "./processes.ts";

const root = mkdtempSync(join(tmpdir(), "troupe-api-coding-"));
const store = `file://${join(root, "store")}`;
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SHRINK = [
  "train.steps=2",
  "train.tasksPerStep=1",
  "train.evalEvery=0",
  "train.evalTasks=1",
  "strategy.groupSize=2",
  "environment.options.maxTurns=1",
  "sampling.maxTokens=8",
  "model={hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, max_position_embeddings: 4096}",
];

describe("a published coding team", () => {
  it("is trained, published and answers /v1/solve with its program and test results", async () => {
    await trainAndPublish({
      recipe: "magrpo-humaneval",
      run: "coders",
      name: "coders",
      store,
      sets: SHRINK,
      timeoutMs: 400_000,
    });

    const registry = createTeamRegistry(new FileStore(join(root, "store")));
    const backend = createOnnxBackend();
    const sandbox = await createSandbox();
    const ask = (app: ReturnType<typeof createApp>) =>
      app.request("/v1/solve", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ team: "coders", input: { generate: { seed: 0 } }, options: { seed: 3 } }),
      });
    try {
      const refused = await ask(createApp({ registry, backend }));
      expect(refused.status).toBe(501);

      const res = await ask(createApp({ registry, backend, sandbox }));
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.task.id).toBe("CoopHumanEval/0");
      expect(new Set(body.turns.map((t: { role: string }) => t.role))).toEqual(new Set(["helper", "main"]));
      const answer = body.answer as CodeAnswer;
      expect(answer).toMatchObject({ kind: "code", entryPoint: "x_or_y", turns: 1 });
      expect(answer.program.startsWith("def x_or_y(n, x, y):")).toBe(true);
      expect(Object.keys(answer.parts).sort()).toEqual(["helper", "main"]);
      // A tiny untrained model writes no working code: the run reports why, and no test passes.
      expect(answer.tests!.passed).toBe(0);
      expect(body.solved).toBe(false);
    } finally {
      await backend.close();
    }
  }, 600_000);
});
