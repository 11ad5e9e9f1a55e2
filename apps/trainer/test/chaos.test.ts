/**
 * `nx run trainer:chaos` with N = 2: two kill -9 at random moments (seeded) and resumes, the runs
 * compared with an uninterrupted one; a flipped byte in a shard and in a checkpoint, each named by
 * `train --resume`, `eval` and `publish`; and a run on S3 through the fault proxy with one kill.
 * (docs/training.md has the numbers of a run with N ≥ 20.)
 */
import { spawnSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

describe("trainer:chaos", () => {
  it("survives 2 kills with identical results, names 6 of 6 corruptions, survives S3 faults", () => {
    const run = spawnSync(
      process.execPath,
      [
        "--conditions=@troupe/source",
        "--import",
        "tsx",
        "bench/chaos.ts",
        "--kills",
        "2",
        "--s3-kills",
        "1",
        "--seed",
        "1",
      ],
      { cwd: appRoot, encoding: "utf8", timeout: 900_000 },
    );
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines.find((l) => l.startsWith("kills survived"))).toMatch(
      /^kills survived with identical results: 2\/2 \(over \d+ victim runs\)$/,
    );
    expect(lines).toContain(
      "corruptions detected by name: 6/6 (shard: train --resume, eval, publish; checkpoint: train --resume, eval, publish)",
    );
    const summary = JSON.parse(lines.at(-1)!);
    expect(summary).toMatchObject({ kills: 2, survivedIdentical: 2, corruptionsNamed: 6 });
    expect(summary.s3).toMatchObject({ kills: 1, identical: true, orphans: 0 });
    const injected = Object.entries(summary.s3.faults as Record<string, number>)
      .filter(([kind]) => kind !== "none")
      .reduce((n, [, count]) => n + count, 0);
    expect(injected).toBeGreaterThan(0);
  }, 900_000);
});
