/**
 * Continuous batching through the Hono app (the real tiny ONNX team): concurrent solves give the
 * transcripts of the same solves one at a time — and of the unbatched FIFO backend — at
 * temperature 0 and with seeded sampling; past the bounded queue, 503 with Retry-After.
 */
import { createTeamRegistry, type TeamRegistry } from "@troupe/teams";
import { createOnnxBackend, type OnnxBackend, type OnnxBackendOptions } from "@troupe/teams/onnx";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type TroupeApp } from "../src/app.ts";
import { tempStore, tinyTeam } from "./fixtures.ts";

const tmp = tempStore();
let registry: TeamRegistry;
const backends: OnnxBackend[] = [];

beforeAll(async () => {
  registry = createTeamRegistry(tmp.store);
  await registry.publish(await tinyTeam("tiny"));
}, 60_000);
afterAll(async () => {
  for (const b of backends) await b.close();
  tmp.cleanup();
});

function appWith(options: OnnxBackendOptions): TroupeApp {
  const backend = createOnnxBackend(options);
  backends.push(backend);
  return createApp({ registry, backend, log: () => {} });
}

const solveBody = (task: number, options: Record<string, unknown>) =>
  JSON.stringify({ team: "tiny", input: { generate: { seed: task } }, options });

async function solveOn(app: TroupeApp, body: string) {
  const res = await app.request("/v1/solve", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), json: await res.json() };
}

/** The answer without its timings. */
// biome-ignore lint/suspicious/noExplicitAny: a response body, compared whole
const timeless = (json: any) => ({
  ...json,
  latencyMs: 0,
  turns: json.turns.map((t: object) => ({ ...t, ms: 0 })),
});

describe("continuous batching through the app", () => {
  const tasks = [1, 2, 3, 4, 5, 6];

  for (const [what, options] of [
    ["temperature 0", { temperature: 0, seed: 5 }],
    ["seeded sampling", { temperature: 1, seed: 9 }],
  ] as const) {
    it(`${what}: six concurrent solves give the transcripts of the same solves one at a time, batched or not`, async () => {
      const batched = appWith({ batching: true });
      const unbatched = appWith({ batching: false });
      const bodies = tasks.map((t) => solveBody(t, options));
      const alone = [];
      for (const body of bodies) alone.push(await solveOn(unbatched, body));
      const together = await Promise.all(bodies.map((body) => solveOn(batched, body)));
      expect(together.map((r) => r.status)).toEqual(tasks.map(() => 200));
      expect(together.map((r) => timeless(r.json))).toEqual(alone.map((r) => timeless(r.json)));
      // The turns generated something, and the six requests did share decode steps.
      expect(alone.every((r) => r.json.turns.length > 0 && r.json.turns[0].completion !== "")).toBe(true);
      const stats = backends.at(-2)!.stats();
      expect(stats.maxActive).toBeGreaterThan(1);
      expect(stats.active).toBe(0);
    }, 60_000);
  }

  it("past the bounded queue: 503 `overloaded` with Retry-After, the others answered", async () => {
    const app = appWith({ batching: true, maxBatch: 1, maxQueued: 1 });
    const results = await Promise.all(tasks.map((t) => solveOn(app, solveBody(t, { temperature: 0 }))));
    const refused = results.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    expect(results.every((r) => r.status === 200 || r.status === 503)).toBe(true);
    for (const r of refused) {
      expect(r.retryAfter).toBe("1");
      expect(r.json.error.code).toBe("overloaded");
      expect(r.json.error.message).toMatch(
        /^policy "(planner|fixer)": 1 generations are already waiting \(maxQueued\); retry later$/,
      );
    }
    // The queue drained: a request after the burst is answered.
    expect((await solveOn(app, solveBody(1, { temperature: 0 }))).status).toBe(200);
  }, 60_000);
});
