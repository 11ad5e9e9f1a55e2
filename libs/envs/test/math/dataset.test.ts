/** GSM8K as math problems: the shipped splits, and a bad row named. */
import { stableHash } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { problemHash } from "../../src/coding/split.ts";
import { gsm8kTasks, loadGsm8k } from "../../src/math/dataset.ts";

describe("GSM8K data", () => {
  it("ships the full test and train splits, disjoint by a hash of the question", async () => {
    const [train, test] = await Promise.all([gsm8kTasks("train"), gsm8kTasks("test")]);
    expect([train.length, test.length]).toEqual([7473, 1319]);
    expect(test[0]!.payload.answer).toBe(18);
    const trainHashes = new Set(train.map((t) => problemHash(t.payload.question)));
    expect(test.filter((t) => trainHashes.has(problemHash(t.payload.question)))).toEqual([]);
    expect(new Set(test.map((t) => t.id)).size).toBe(test.length);
    expect(stableHash(test.map((t) => t.payload.answer))).toBe(stableHash(test.map((t) => t.payload.answer)));
  });

  it("names a bad row", async () => {
    const { writeFile, mkdtemp } = await import("node:fs/promises");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const dir = await mkdtemp(join(tmpdir(), "troupe-gsm-"));
    const path = join(dir, "bad.jsonl");
    await writeFile(
      path,
      `${JSON.stringify({ question: "q", answer: "#### 1" })}\n${JSON.stringify({ question: "q", answer: "no hashes" })}\n`,
    );
    await expect(loadGsm8k(path, "x")).rejects.toThrow(/row 2: field answer: must end with/);
    await writeFile(path, `${JSON.stringify({ question: "q", answer: "#### seven" })}\n`);
    await expect(loadGsm8k(path, "x")).rejects.toThrow(
      /row 1: field answer: final answer "seven" is not a number/,
    );
  });
});
