import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deepFreeze, Rng } from "@troupe/core";
import { parquetWriteBuffer } from "hyparquet-writer";
import { describe, expect, it } from "vitest";
import { problemHash } from "../../src/coding/index.ts";
import { loadWriting, WRITING_AGENTS, writingEnv, writingTasks } from "../../src/writing/index.ts";

describe("writing data", () => {
  it("loads the shipped test splits and splits them disjointly by hash", async () => {
    const tldr = await loadWriting("tldr");
    const arxiv = await loadWriting("arxiv");
    expect([tldr.length, arxiv.length]).toEqual([128, 320]);
    expect(tldr[0]).toMatchObject({ kind: "tldr", id: "t3_3diy5w" });
    for (const problems of [tldr, arxiv]) {
      const { train, test } = writingTasks(problems, { testFraction: 0.5 });
      expect(train.length + test.length).toBe(problems.length);
      expect(train.length > 0 && test.length > 0).toBe(true);
      const trainHashes = new Set(train.map((t) => problemHash(t.payload.text)));
      expect(test.some((t) => trainHashes.has(problemHash(t.payload.text)))).toBe(false);
    }
  });

  it("reads Parquet with renamed columns, and names a bad row", async () => {
    const dir = await mkdtemp(join(tmpdir(), "troupe-writing-"));
    const path = join(dir, "tldr.parquet");
    const buffer = parquetWriteBuffer({
      columnData: [
        {
          name: "prompt",
          data: ["A long post about bikes and roommates.", "Another post about dogs."],
          type: "STRING",
        },
        { name: "subreddit", data: ["r/a", "r/b"], type: "STRING" },
      ],
    });
    await writeFile(path, new Uint8Array(buffer));
    const rows = await loadWriting("tldr", path, { fields: { post: "prompt" } });
    expect(rows.map((r) => r.text)).toEqual([
      "A long post about bikes and roommates.",
      "Another post about dogs.",
    ]);
    expect(rows[0]!.id).toMatch(/^tldr\/[0-9a-f]{12}$/);
    await expect(loadWriting("tldr", path)).rejects.toThrow(/row 1: field post/);

    const bad = join(dir, "arxiv.jsonl");
    await writeFile(
      bad,
      `${JSON.stringify({ id: "x1", abstract: "fine" })}\n${JSON.stringify({ id: "x2", abstract: "" })}\n`,
    );
    await expect(loadWriting("arxiv", bad)).rejects.toThrow(
      /row 2 \(id "x2"\): field abstract: must be a non-empty abstract/,
    );
  });
});

describe("writing environments", () => {
  it("one parallel step: team = tiered reward, local = own length bound", async () => {
    const env = writingEnv("tldr");
    const [task] = writingTasks(await loadWriting("tldr"), { testFraction: 0 }).train;
    const s0 = deepFreeze(await env.reset(task!, 0));
    expect(env.observe(s0, "concise").messages[0]!.content).toContain("TL;DR");
    const r = await env.step(s0, {
      concise: "alpha beta gamma delta epsilon zeta eta theta",
      detailed: "alpha iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega however",
    });
    expect(r.teamReward).toBeCloseTo(2.76, 12);
    expect(r).toMatchObject({ done: true, success: true, localRewards: { concise: 0.5, detailed: 0.5 } });
    await expect(async () => env.step(r.state, {})).rejects.toThrow(/finished episode/);
  });

  it("random policy over all sample tasks: rewards within bounds", async () => {
    const rng = new Rng(11);
    const vocab =
      "the model writes however for example therefore data team reward cat dog run fast slow".split(" ");
    const text = () => Array.from({ length: rng.intBetween(0, 300) }, () => rng.pick(vocab)).join(" ");
    for (const kind of ["tldr", "arxiv"] as const) {
      const env = writingEnv(kind);
      const problems = await loadWriting(kind);
      const [a, b] = WRITING_AGENTS[kind];
      for (let i = 0; i < 60; i++) {
        const problem = problems[i % problems.length]!;
        const s = deepFreeze(await env.reset({ id: problem.id, split: "train", payload: problem }, i));
        const r = await env.step(s, { [a]: text(), [b]: text() });
        expect(r.teamReward).toBeGreaterThanOrEqual(env.rewardBounds!.team[0]);
        expect(r.teamReward).toBeLessThanOrEqual(env.rewardBounds!.team[1]);
        for (const v of Object.values(r.localRewards)) {
          expect(v).toBeGreaterThanOrEqual(env.rewardBounds!.local[0]);
          expect(v).toBeLessThanOrEqual(env.rewardBounds!.local[1]);
        }
      }
    }
  });

  it("rejects a task of the other kind", async () => {
    const [p] = await loadWriting("arxiv");
    expect(() => writingEnv("tldr").reset({ id: p!.id, split: "train", payload: p! }, 0)).toThrow(
      /is a arxiv task/,
    );
  });
});
