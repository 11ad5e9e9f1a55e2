/** MBPP and CoopHumanEval as coding problems: the rendering, the dropped tasks, the repaired reference. */
import { createSandbox } from "@troupe/sandbox";
import { describe, expect, it, test } from "vitest";
import { runTests } from "../../src/coding/harness.ts";
import { loadJsonl } from "../../src/coding/load.ts";
import {
  coopHumanEvalProblems,
  MBPP_DROPPED,
  MBPP_PATH,
  MBPP_REFERENCE_REPAIRS,
  MbppRowSchema,
  mbppEntryPoint,
  mbppProblem,
  mbppProblems,
} from "../../src/coding/mbpp.ts";

const sandbox = await createSandbox();

describe("an MBPP row as a problem", () => {
  it("the entry point: the defined function the first assert calls, else the first defined", () => {
    const code = "def helper(x):\n    return x\n\ndef solve(a, b):\n    return helper(a) + b\n";
    expect(mbppEntryPoint(code, "assert solve(1, 2) == 3")).toBe("solve");
    expect(mbppEntryPoint(code, "assert something_else(1) == 3")).toBe("helper");
    expect(() => mbppEntryPoint("x = 1", "assert x == 1")).toThrow('mbpp: no function defined in "x = 1"');
  });

  it("prompt: the signature with the text and the first assert as docstring; tests call `candidate`", () => {
    const problem = mbppProblem({
      task_id: 7,
      text: 'Write a function to add two "numbers".',
      code: "def add(a, b) :\r\n\treturn a + b",
      test_setup_code: "import math",
      test_list: ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
    });
    expect(problem).toEqual({
      taskId: "mbpp/7",
      prompt:
        'def add(a, b):\n    """Write a function to add two "numbers".\n    >>> add(1, 2) == 3\n    """\n',
      canonicalSolution: "    pass\n\ndef add(a, b) :\n    return a + b\n",
      test: "def check(candidate):\n    import math\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n",
      entryPoint: "add",
    });
  });

  test("MBPP: the four tasks no solution can pass are dropped, 123 keeps its own answers", async () => {
    const ids = new Set(mbppProblems().map((p) => p.taskId));
    expect(Object.keys(MBPP_DROPPED).filter((id) => ids.has(`mbpp/${id}`))).toEqual([]);
    expect([ids.size, Object.keys(MBPP_DROPPED)]).toEqual([970, ["367", "533", "601", "927"]]);
    // The faster reference returns what the original returns: around and at amicable numbers, bad
    // inputs (the original takes O(n²) per call, so no long range of them).
    const original = (await loadJsonl(MBPP_PATH, MbppRowSchema, "task_id")).find((r) => r.task_id === 123)!;
    const run = await sandbox.run({
      language: "python",
      code: [
        "original, repaired = {}, {}",
        `exec(${JSON.stringify(original.code)}, original)`,
        `exec(${JSON.stringify(MBPP_REFERENCE_REPAIRS[123])}, repaired)`,
        "inputs = [-3, 0, 1, 2, 219, 220, 284, 285, 1184, 1210, 1500, 2.5, '7', None]",
        "print([x for x in inputs if original['amicable_numbers_sum'](x) != repaired['amicable_numbers_sum'](x)])",
      ].join("\n"),
      limits: { wallMs: 30_000, cpuSeconds: 30 },
    });
    expect([run.status, run.stdout]).toEqual(["ok", "[]\n"]);
  });

  test("CoopHumanEval: 82 problems, none with a reference solution", () => {
    const problems = coopHumanEvalProblems();
    expect(problems).toHaveLength(82);
    expect(problems.filter((p) => p.canonicalSolution !== "")).toEqual([]);
    for (const p of problems) expect(p.prompt).toContain(`def ${p.entryPoint}(`);
  });

  test("MBPP as check(candidate) problems: the references pass", async () => {
    const problems = mbppProblems().slice(10, 22);
    const reports = await Promise.all(
      problems.map((p) =>
        runTests(sandbox, {
          program: p.prompt + p.canonicalSolution,
          tests: p.test,
          style: "check",
          entryPoint: p.entryPoint,
          trusted: p.prompt,
        }),
      ),
    );
    expect(reports.map((r) => `${r.passed}/${r.total}`)).toEqual(problems.map(() => "3/3"));
    expect(problems[0]!.prompt).toBe(
      'def remove_Occ(s,ch):\n    """Write a python function to remove first and last occurrence of a given character from the string.\n    >>> remove_Occ("hello","l") == "heo"\n    """\n',
    );
  });
});
