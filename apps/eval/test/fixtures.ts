/**
 * Test fixtures: a real tiny team (two freshly initialised Qwen3 policies, hidden 32 × 1 layer,
 * byte tokenizer, published with their ONNX decode graphs) for Plan-Path on 4×4 grids, and crafted
 * reports for the gate.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileStore, type ObjectStore } from "@troupe/storage/node";
import { createTeamRegistry } from "@troupe/teams";
import { vi } from "vitest";
import { tinyTeamInput } from "../../../libs/teams/test/fixtures.ts";
import { successByDifficulty } from "../src/evaluate.ts";
import { main } from "../src/main.ts";
import { type Estimate, EVAL_REPORT_SCHEMA_VERSION, type EvalEntry, type EvalReport } from "../src/schema.ts";

/** Publishes the tiny planner+fixer team (libs/teams' fixture: ONNX graphs included, so an "embedded" team), greedy. */
export async function publishTinyTeam(store: ObjectStore, name: string, alias?: string) {
  const input = await tinyTeamInput(name, { seed: 11, temperature: 0, runId: "eval-fixture" });
  return createTeamRegistry(store).publish({ ...input, ...(alias ? { alias } : {}) });
}

/**
 * Success by difficulty of six known episodes: difficulty 3 solved 2 of 3, 4 not judged (so not
 * solved), 5 solved 1 of 2.
 */
export const sixEpisodesByDifficulty = () =>
  successByDifficulty(
    [5, 3, 3, 5, 4, 3],
    [
      { solved: false },
      { solved: true },
      { solved: true },
      { solved: true },
      { solved: null },
      { solved: false },
    ],
  );

export function tempDir(prefix: string): { root: string; store: FileStore; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), prefix));
  return {
    root,
    store: new FileStore(join(root, "store")),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

export const estimate = (value: number, half: number, method: Estimate["method"] = "wilson"): Estimate => ({
  value,
  low: Math.max(0, value - half),
  high: Math.min(1, value + half),
  n: 64,
  method,
});

/** A report with one entry per (key, success, pass@1) given; the intervals' half-width is `half`. */
export function craftedReport(
  entries: { key: string; success: number; passAt1: number; half?: number; testPassRate?: number }[],
): EvalReport {
  return {
    schemaVersion: EVAL_REPORT_SCHEMA_VERSION,
    kind: "troupe-eval-report",
    createdAt: "2026-01-01T02:00:00.000Z",
    suite: { name: "nightly", tasks: 64, samples: 10, temperature: 1, topP: 1, k: [1, 3, 5, 10], seed: 0 },
    store: "file:///tmp/x",
    entries: entries.map(
      (e): EvalEntry => ({
        subject: { kind: "team", name: e.key, version: 1, ref: "latest" },
        label: `${e.key}@v1`,
        key: `team:${e.key}/plan-path`,
        environment: { name: "plan-path", options: {} },
        backend: "onnx",
        tasks: 64,
        samples: 10,
        metrics: {
          success: estimate(e.success, e.half ?? 0.1),
          meanTeamReturn: { value: -0.3, low: -0.4, high: -0.2, n: 64, method: "t" },
          passAtK: { "1": estimate(e.passAt1, e.half ?? 0.1, "t") },
          ...(e.testPassRate !== undefined ? { testPassRate: estimate(e.testPassRate, 0.05, "t") } : {}),
        },
        usage: {},
        latency: { episodes: 0, meanMs: 0, p50Ms: 0, p95Ms: 0 },
        examples: [],
        seconds: 1,
      }),
    ),
  };
}

/** Runs the eval CLI in-process, capturing what it writes to stdout and stderr. */
export async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const o = vi.spyOn(process.stdout, "write").mockImplementation((s) => {
    out += String(s);
    return true;
  });
  const e = vi.spyOn(process.stderr, "write").mockImplementation((s) => {
    err += String(s);
    return true;
  });
  try {
    return { code: await main(argv), out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}
