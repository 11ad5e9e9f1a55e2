/**
 * Test fixtures: a real tiny team (two freshly initialised Qwen3 policies, hidden 32 × 1 layer,
 * byte tokenizer) published into a FileStore in a temp folder, and the API served over real HTTP
 * on 127.0.0.1 (a free port) with @hono/node-server.
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { tinyQwenConfig } from "@troupe/engine";
import { createOnnxEngine } from "@troupe/engine-onnx";
import { FileStore } from "@troupe/storage/node";
import { checkpointSummary, type PublishInput, servingFiles } from "@troupe/teams";

export const tinyConfig = tinyQwenConfig({
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 16,
  max_position_embeddings: 512,
});

/** Plan-Path on 4×4 grids with the compact roles (planner, then fixer), two turns at most. */
export const planPath = {
  name: "plan-path",
  options: { roles: "compact", maxTurns: 2, rows: 4, cols: 4, blockedFraction: 0.1, minPathLength: 2 },
};

/** The publish input of a tiny planner+fixer team; `environment` can be swapped (e.g. a tool team). */
export async function tinyTeam(
  name: string,
  environment: PublishInput["environment"] = planPath,
): Promise<PublishInput> {
  const policies: Record<string, PublishInput["policies"][string]> = {};
  for (const [i, policyId] of ["planner", "fixer"].entries()) {
    const engine = await createOnnxEngine({ policies: [{ id: policyId, config: tinyConfig, seed: 11 + i }] });
    const files = servingFiles(await engine.save(policyId));
    await engine.close();
    const { model, parameters } = checkpointSummary(files);
    policies[policyId] = { files, model, parameters, sampling: { temperature: 1, topP: 1, maxTokens: 8 } };
  }
  return {
    name,
    environment,
    team: { specialisation: "per-role" },
    roles: [
      { id: "planner", policy: "planner" },
      { id: "fixer", policy: "fixer" },
    ],
    policies,
    source: { runId: "api-fixture", step: 0 },
  };
}

export function tempStore(): { store: FileStore; root: string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), "troupe-api-"));
  return { store: new FileStore(root), root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

export interface Listening {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Serves a fetch handler on 127.0.0.1 at a free port. */
export function listen(fetch: (request: Request) => Response | Promise<Response>): Promise<Listening> {
  return new Promise((resolve) => {
    const server = serve({ fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => {
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
            server.close(() => done());
          }),
      });
    });
  });
}

/** Parses a text/event-stream body into its events (event name + JSON data). */
export function parseSse(text: string): { event: string; data: unknown }[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      return { event, data: JSON.parse(data.join("\n")) };
    });
}

/** A stack trace or a source location in a response body is a leak. */
export const STACK_TRACE = /\bat [^\n]*\(?[^\n]*:\d+:\d+\)?|\.ts:\d+|node_modules|file:\/\//;
