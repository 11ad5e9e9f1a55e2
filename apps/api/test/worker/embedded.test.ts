/**
 * The embedded Worker build (infra/workers/wrangler.embedded.toml) run locally and offline in
 * workerd: published ONNX teams run inside the Worker by onnxruntime-web's wasm build, weights read
 * from the local R2 bucket. The same teams are served by the Node app (createApp with the
 * onnxruntime-node backend of @troupe/teams/onnx, as the Node server runs it: with continuous
 * batching, and without), and at temperature 0 all must write the same transcript, byte for
 * byte, on every task: 12 generated tasks of each of two games (Plan-Path
 * and Sokoban), each team with two policies (planner, fixer: different weights).
 *
 * Also: a team over the weight budget gets one 507 naming the limit, and the isolate keeps
 * serving. Cold start and per-request latencies are printed (local workerd on the test machine).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { QwenConfig } from "@troupe/engine";
import { createOnnxEngine } from "@troupe/engine-onnx";
import { checkpointSummary, createTeamRegistry, type PublishInput, servingFiles } from "@troupe/teams";
import { createOnnxBackend, exportDecodeGraph, type OnnxBackend } from "@troupe/teams/onnx";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getPlatformProxy } from "wrangler";
import { tinyConfig } from "../../../../libs/teams/test/fixtures.ts";
import { createApp, type TroupeApp } from "../../src/app.ts";
import { sha256Hex } from "../../src/auth.ts";
import { type R2BucketBinding, R2Store } from "../../src/worker/r2-store.ts";
import { planPath, tempStore } from "../fixtures.ts";
import { type LocalWorker, startLocalWorker } from "../local-worker.ts";

const CONFIG = new URL("../../../../infra/workers/wrangler.embedded.toml", import.meta.url).pathname;
process.env.WRANGLER_BUILD_CONDITIONS = "@troupe/source,workerd,worker,browser";
process.env.WRANGLER_SEND_METRICS = "false";

const TASKS_PER_GAME = 12;
const sokoban = { name: "sokoban", options: { roles: "compact", maxTurns: 2 } };

/**
 * Fresh policies at the usual init (σ 0.02) answer every prompt alike at temperature 0, which would
 * make the comparison one transcript repeated. With σ 0.5 a tiny model's greedy answers depend on
 * the prompt, as a trained policy's do (and its logits are as peaked, so not near-ties).
 */
const sharpConfig = { ...tinyConfig, initializer_range: 0.5 };

/** A planner+fixer team (two policies, different weights) served greedily, with model.onnx as the trainer publishes it. */
async function greedyTeam(
  name: string,
  environment: PublishInput["environment"],
  seed: number,
  config: QwenConfig = sharpConfig,
): Promise<PublishInput> {
  const policies: Record<string, PublishInput["policies"][string]> = {};
  for (const [i, id] of ["planner", "fixer"].entries()) {
    const engine = await createOnnxEngine({ policies: [{ id, config, seed: seed + i }] });
    const files = servingFiles(await engine.save(id));
    await engine.close();
    const graph = exportDecodeGraph(config);
    files[graph.info.file] = graph.bytes;
    const { model, parameters } = checkpointSummary(files);
    policies[id] = {
      files,
      model,
      parameters,
      sampling: { temperature: 0, topP: 1, maxTokens: 8 },
      onnx: graph.info,
    };
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
    source: { runId: "embedded-worker", step: 0 },
  };
}

/** Wider policies (hidden 128 × 2 layers): more weights than the Worker in this test allows. */
const largeTeam = (name: string) =>
  greedyTeam(name, planPath, 3, {
    ...tinyConfig,
    hidden_size: 128,
    intermediate_size: 256,
    num_hidden_layers: 2,
  });

type Worker = LocalWorker;
interface SolveBody {
  task: unknown;
  answer: unknown;
  solved: boolean | null;
  teamReturn: number;
  turns: ({ ms?: number } & Record<string, unknown>)[];
  usage: unknown;
  seed: number;
}

/** The transcript of a solve, without its timings: what must be byte-identical. */
const transcript = (body: SolveBody) =>
  JSON.stringify({
    task: body.task,
    answer: body.answer,
    solved: body.solved,
    teamReturn: body.teamReturn,
    turns: body.turns.map(({ ms: _ms, ...turn }) => turn),
    usage: body.usage,
    seed: body.seed,
  });

const solveRequest = (team: string, seed: number) => ({
  method: "POST",
  headers: { "content-type": "application/json", authorization: "Bearer k" },
  body: JSON.stringify({ team, input: { generate: { seed } }, options: { seed: 7 } }),
});

let persist: string;
let worker: Worker;
let url: URL;
/** The Node app as the server runs it (continuous batching, its default) and with the FIFO pool. */
let node: { apps: { batching: boolean; app: TroupeApp; backend: OnnxBackend }[]; cleanup: () => void };
let smallWeights = 0;
const teams: [string, PublishInput][] = [];

beforeAll(async () => {
  persist = mkdtempSync(join(tmpdir(), "troupe-embedded-"));
  teams.push(
    ["path", await greedyTeam("path", planPath, 21)],
    ["boxes", await greedyTeam("boxes", sokoban, 31)],
  );
  const large = await largeTeam("wide");
  // The same publish inputs into the Worker's local R2 and into a FileStore for the Node app.
  const proxy = await getPlatformProxy<{ TEAMS: R2BucketBinding }>({
    configPath: CONFIG,
    persist: { path: join(persist, "v3") },
  });
  const files = tempStore();
  try {
    for (const registry of [
      createTeamRegistry(new R2Store(proxy.env.TEAMS)),
      createTeamRegistry(files.store),
    ]) {
      for (const [, input] of teams) await registry.publish(input);
    }
    await createTeamRegistry(new R2Store(proxy.env.TEAMS)).publish(large);
  } finally {
    await proxy.dispose();
  }
  for (const [, input] of teams) {
    const bytes = Object.values(input.policies).reduce((s, p) => s + p.files["model.safetensors"]!.length, 0);
    smallWeights = Math.max(smallWeights, bytes);
  }
  node = {
    apps: [true, false].map((batching) => {
      const backend = createOnnxBackend({ batching });
      const registry = createTeamRegistry(files.store);
      return { batching, backend, app: createApp({ registry, backend, sandboxAvailable: false }) };
    }),
    cleanup: files.cleanup,
  };
  worker = await startLocalWorker(CONFIG, persist, {
    // The key "k". The weight budget sits between the small teams and the wide one.
    TROUPE_API_KEY_HASHES: await sha256Hex("k"),
    TROUPE_EMBEDDED_MAX_WEIGHT_BYTES: String(smallWeights * 2),
  });
  url = await worker.url;
}, 120_000);

afterAll(async () => {
  await worker?.dispose();
  for (const { backend } of node?.apps ?? []) await backend.close();
  node?.cleanup();
  if (persist) rmSync(persist, { recursive: true, force: true });
});

describe("the embedded team inside the Worker (workerd, local R2, onnxruntime-web)", {
  timeout: 120_000,
}, () => {
  it("gives the Node server's transcripts byte for byte at temperature 0: 2 games × 12 tasks, 2 policies", async () => {
    const solves: { team: string; worker: number; node: number; turns: number }[] = [];
    const completions = new Set<unknown>();
    const tasks = new Set<string>();
    // The isolate's first request, before any engine (workerd's own start-up; the plain build's too).
    const healthStarted = performance.now();
    expect((await fetch(new URL("/healthz", url))).status).toBe(200);
    const healthMs = performance.now() - healthStarted;
    for (const [team] of teams) {
      for (let seed = 0; seed < TASKS_PER_GAME; seed++) {
        let started = performance.now();
        const response = await fetch(new URL("/v1/solve", url), solveRequest(team, seed));
        const body = (await response.json()) as SolveBody;
        const worker = performance.now() - started;
        expect(response.status, JSON.stringify(body)).toBe(200);
        // Both policies answered, each with its own weights.
        expect(new Set(body.turns.map((t) => t.policy))).toEqual(new Set(["planner", "fixer"]));
        let nodeMs = 0;
        for (const { batching, app } of node.apps) {
          started = performance.now();
          const reference = await app.fetch(new Request("http://node/v1/solve", solveRequest(team, seed)));
          const expected = (await reference.json()) as SolveBody;
          if (batching) nodeMs = performance.now() - started;
          expect(reference.status).toBe(200);
          expect(transcript(body), `node batching ${batching}, ${team} task ${seed}`).toBe(
            transcript(expected),
          );
        }
        solves.push({ team, worker, node: nodeMs, turns: body.turns.length });
        for (const t of body.turns) completions.add(t.completion);
        tasks.add(`${team}/${(body.task as { id: string }).id}`);
      }
    }
    // 24 different tasks, and not one answer repeated: the policies' answers depend on the task.
    expect(tasks.size).toBe(2 * TASKS_PER_GAME);
    expect(completions.size).toBeGreaterThanOrEqual(10);

    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const cold = teams.map(([team]) => solves.find((s) => s.team === team)!);
    const warm = solves.filter((s) => !cold.includes(s));
    const perTurn = (side: "worker" | "node") => median(warm.map((s) => s[side] / s.turns)).toFixed(1);
    console.log(
      `embedded worker, local workerd: first request (/healthz) ${healthMs.toFixed(0)} ms; first solve ` +
        `${cold.map((s) => `${s.team} ${s.worker.toFixed(0)} ms (node ${s.node.toFixed(0)} ms)`).join(", ")}; ` +
        `warm per-turn p50 ${perTurn("worker")} ms over HTTP (node app in-process ${perTurn("node")} ms); ` +
        `${solves.reduce((n, s) => n + s.turns, 0)} turns, ${completions.size} distinct completions`,
    );
  });

  it("refuses a team over the weight budget with one 507 naming the limit, and keeps serving", async () => {
    const response = await fetch(new URL("/v1/solve", url), solveRequest("wide", 1));
    expect(response.status).toBe(507);
    const body = (await response.json()) as { error: { code: string; message: string; path: string[] } };
    expect(body.error.code).toBe("unsupported");
    expect(body.error.path).toEqual(["team"]);
    expect(body.error.message).toMatch(
      /^team "wide" v1 has \d+ bytes \(\d+\.\d MB\) of weights \(2 policies\); the embedded engine on Workers takes at most \d+ bytes \(\d+\.\d MB\) \(TROUPE_EMBEDDED_MAX_WEIGHT_BYTES\), within the 128 MB memory limit of a Worker isolate/,
    );
    // The same isolate still answers.
    const again = await fetch(new URL("/v1/solve", url), solveRequest("path", 0));
    expect(again.status).toBe(200);
    await again.body?.cancel();
  });

  it("serves the playground, which streams an embedded team's turns from the Worker (Chromium)", async () => {
    const browser = await chromium.launch({
      executablePath: process.env.TROUPE_CHROMIUM ?? "/usr/bin/chromium",
      args: ["--no-sandbox"],
    });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      expect((await page.goto(new URL("/", url).href))?.status()).toBe(200);
      await page.fill("#api-key", "k");
      await page.click("#connect");
      await page.waitForSelector('#team option[value="path"]', { state: "attached" });
      await page.selectOption("#team", "path");
      await page.fill("#seed", "3");
      await page.fill("#sampling-seed", "7");
      await page.click("#run");
      await page.waitForSelector("#outcome", { timeout: 30_000 });
      expect(await page.textContent("#run-status")).toBe("done");
      const shown = await page.$$eval("#turns li.turn pre.completion", (nodes) =>
        nodes.map((n) => n.textContent),
      );
      const direct = (await (
        await fetch(new URL("/v1/solve", url), {
          method: "POST",
          headers: { "content-type": "application/json", authorization: "Bearer k" },
          body: JSON.stringify({
            team: "path",
            input: { generate: { split: "test", seed: 3 } },
            options: { seed: 7 },
          }),
        })
      ).json()) as SolveBody;
      expect(shown).toEqual(direct.turns.map((t) => (t.completion === "" ? "(empty)" : t.completion)));
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
