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
import { FileStore } from "@troupe/storage/node";
import type { PublishInput } from "@troupe/teams";
import {
  planPathEnvironment,
  type TinyTeamOptions,
  tinyTeamInput,
} from "../../../libs/teams/test/fixtures.ts";

/** Plan-Path on 4×4 grids with the compact roles (planner, then fixer), two turns at most. */
export const planPath = planPathEnvironment;

/**
 * The publish input of the tiny planner+fixer team (libs/teams' fixture), without ONNX graphs;
 * `environment` can be swapped (e.g. a tool team).
 */
export function tinyTeam(
  name: string,
  environment: PublishInput["environment"] = planPath,
  options: Pick<TinyTeamOptions, "roles" | "maxPositions"> = {},
) {
  return tinyTeamInput(name, { seed: 11, onnx: false, environment, runId: "api-fixture", ...options });
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
