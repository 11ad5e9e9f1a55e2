import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { createSandbox } from "@troupe/sandbox";
import { describe, expect, it, test } from "vitest";
import {
  codingTasks,
  HUMANEVAL_TEST_REPAIRS,
  humanEvalProblems,
  loadHumanEval,
  problemHash,
  runTests,
} from "../../src/coding/index.ts";

const row = {
  task_id: "T/0",
  prompt: "def f(x):\n    '''Identity.'''\n",
  canonical_solution: "    return x\n",
  test: "def check(candidate):\n    assert candidate(1) == 1\n",
  entry_point: "f",
};

describe("HumanEval loader", () => {
  it("loads the shipped copy: 164 problems", async () => {
    const problems = await loadHumanEval();
    expect(problems).toHaveLength(164);
    expect(problems[0]!.taskId).toBe("HumanEval/0");
    expect(problems[0]!.entryPoint).toBe("has_close_elements");
  });

  it("reads plain and gzipped JSONL, and names a bad row and field", async () => {
    const dir = await mkdtemp(join(tmpdir(), "troupe-he-"));
    const plain = join(dir, "a.jsonl");
    await writeFile(plain, `${JSON.stringify(row)}\n\n${JSON.stringify({ ...row, task_id: "T/1" })}\n`);
    const gz = join(dir, "a.jsonl.gz");
    await writeFile(gz, gzipSync(`${JSON.stringify(row)}\n`));
    expect((await loadHumanEval(plain)).map((p) => p.taskId)).toEqual(["T/0", "T/1"]);
    expect((await loadHumanEval(gz))[0]!.canonicalSolution).toBe("    return x\n");

    const bad = join(dir, "bad.jsonl");
    await writeFile(
      bad,
      `${JSON.stringify(row)}\n${JSON.stringify({ ...row, task_id: "T/9", entry_point: 3 })}\n`,
    );
    await expect(loadHumanEval(bad)).rejects.toThrow(/row 2 \(task_id "T\/9"\): field entry_point/);
    const notJson = join(dir, "nj.jsonl");
    await writeFile(notJson, "{oops\n");
    await expect(loadHumanEval(notJson)).rejects.toThrow(/line 1 is not valid JSON/);
    const dup = join(dir, "dup.jsonl");
    await writeFile(dup, `${JSON.stringify(row)}\n${JSON.stringify(row)}\n`);
    await expect(loadHumanEval(dup)).rejects.toThrow(/duplicate task_id "T\/0"/);
  });

  it("fetches from a URL", async () => {
    const server = createServer((req, res) => {
      if (req.url === "/he.jsonl.gz") res.end(gzipSync(`${JSON.stringify(row)}\n`));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as { port: number };
    try {
      expect((await loadHumanEval(`http://127.0.0.1:${port}/he.jsonl.gz`)).length).toBe(1);
      await expect(loadHumanEval(`http://127.0.0.1:${port}/missing`)).rejects.toThrow(/HTTP 404/);
    } finally {
      server.close();
    }
  });

  it("splits train/test disjointly by a hash of the problem, deterministically", async () => {
    const problems = await loadHumanEval();
    const { train, test } = codingTasks(problems);
    const trainHashes = new Set(train.map((t) => problemHash(t.payload.prompt)));
    expect(test.every((t) => !trainHashes.has(problemHash(t.payload.prompt)))).toBe(true);
    expect(train.length + test.length).toBe(164);
    expect(train.length).toBeGreaterThan(50);
    expect(test.length).toBeGreaterThan(50);
    // Order-independent: reversing the file gives the same split.
    const again = codingTasks([...problems].reverse());
    expect(new Set(again.test.map((t) => t.id))).toEqual(new Set(test.map((t) => t.id)));
    expect(test.every((t) => t.split === "test") && train.every((t) => t.split === "train")).toBe(true);
  });
});

describe("HumanEval's repaired tests", () => {
  test("HumanEval/33 compares with the canonical solution's values, not with the candidate itself", async () => {
    const p = humanEvalProblems().find((q) => q.taskId === "HumanEval/33")!;
    expect(HUMANEVAL_TEST_REPAIRS["HumanEval/33"]).toHaveLength(3);
    expect(p.test).not.toContain("sort_third(");
    // A function that returns its input used to pass the 3 self-comparisons; now only the first
    // assert, whose expected list is the input itself.
    const report = await runTests(await createSandbox(), {
      program: "def sort_third(l):\n    return list(l)\n",
      tests: p.test,
      style: "check",
      entryPoint: p.entryPoint,
    });
    expect(report.tests.map((t) => t.passed)).toEqual([true, false, false, false, false, false, false]);
  });
});
