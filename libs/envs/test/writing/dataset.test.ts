/** The writing datasets: the shipped TLDR and arXiv splits, Parquet with renamed columns, bad rows named. */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parquetWriteBuffer } from "hyparquet-writer";
import { describe, expect, it } from "vitest";
import { problemHash } from "../../src/coding/split.ts";
import { loadWriting, writingTasks } from "../../src/writing/dataset.ts";

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
