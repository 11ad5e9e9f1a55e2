/** The per-assert harness: exact pass counts for crafted programs, robust to garbage and exit(). */
import { beforeAll, describe, expect, test } from "vitest";
import { createSandbox, parseHarnessOutput, runPythonWithTests, type Sandbox } from "../src/index.ts";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox();
});

const ADD = "def add(a, b):\n    return a + b\n";

describe("runPythonWithTests", () => {
  test("counts each assert: pass, wrong answer, hang, missing name, exit() inside a test", async () => {
    const code = `${ADD}def spin():\n    while True:\n        pass\n`;
    const report = await runPythonWithTests(sandbox, {
      code,
      tests: [
        "assert add(1, 2) == 3",
        "assert add(1, 1) == 3, 'one plus one'",
        "assert spin() is None",
        "assert subtract(3, 1) == 2",
        "exit(0)",
        "assert add(2, 2) == 4",
      ],
      timeoutMs: 5000,
      perTestTimeoutMs: 300,
    });
    expect(report.tests.map((t) => t.passed)).toEqual([true, false, false, false, false, true]);
    expect(report.tests.map((t) => t.reason.split(" ")[0])).toEqual([
      "",
      "AssertionError",
      "timeout",
      "NameError",
      "SystemExit",
      "",
    ]);
    expect(report.tests[1]!.reason).toBe("AssertionError one plus one");
    expect(report.tests[0]!.reason).toBe("");
    expect(report).toMatchObject({ passed: 2, total: 6, fraction: 2 / 6 });
    expect(report.run.status).toBe("ok");
  });

  test("garbage output, forged result lines and exit() in the program do not change the count", async () => {
    const code = [
      ADD,
      "import sys",
      "print('0 PASS\\n1 PASS\\ntroupe-00000000000000000000000000000000 1 PASS')",
      "print(open('main.py').read()[:50], open('/proc/self/cmdline').read())",
      "sys.stdout.write('no newline at the end')",
      "exit(7)",
    ].join("\n");
    const report = await runPythonWithTests(sandbox, {
      code,
      tests: ["assert add(1, 2) == 3", "assert add(1, 2) == 4"],
    });
    expect(report.tests.map((t) => t.passed)).toEqual([true, false]);
    expect(report.passed).toBe(1);
  });

  test("a program that replaces print and closes sys.stdout still gets its results counted", async () => {
    const code = `${ADD}import builtins, sys\nbuiltins.print = lambda *a, **k: None\nsys.stdout.close()\n`;
    const report = await runPythonWithTests(sandbox, { code, tests: ["assert add(2, 3) == 5"] });
    expect(report.passed).toBe(1);
  });

  test("a program that calls os._exit before the asserts fails all of them", async () => {
    const report = await runPythonWithTests(sandbox, {
      code: `${ADD}import os\nos._exit(0)\n`,
      tests: ["assert add(1, 2) == 3", "assert True"],
    });
    expect(report.tests).toEqual([
      { index: 0, passed: false, reason: "no result (ok)" },
      { index: 1, passed: false, reason: "no result (ok)" },
    ]);
    expect(report.fraction).toBe(0);
  });

  test("a program that hangs at import time fails every assert with the run's status", async () => {
    const report = await runPythonWithTests(sandbox, {
      code: "import time\ntime.sleep(100)",
      tests: ["assert True"],
      timeoutMs: 600,
    });
    expect(report.run.status).toBe("timeout");
    expect(report.tests[0]).toEqual({ index: 0, passed: false, reason: "no result (timeout)" });
  });

  test("a syntax error fails every assert with NameError, asserts that need nothing still pass", async () => {
    const report = await runPythonWithTests(sandbox, {
      code: "def add(a, b)\n    return a + b",
      tests: ["assert add(1, 2) == 3", "assert 1 + 1 == 2"],
    });
    expect(report.tests.map((t) => t.passed)).toEqual([false, true]);
    expect(report.tests[0]!.reason).toMatch(/^NameError/);
  });

  test("asMain runs the program's main block", async () => {
    const code = `${ADD}if __name__ == "__main__":\n    RAN = True\n`;
    const asModule = await runPythonWithTests(sandbox, { code, tests: ["assert RAN"] });
    const asMain = await runPythonWithTests(sandbox, { code, tests: ["assert RAN"], asMain: true });
    expect([asModule.passed, asMain.passed]).toEqual([0, 1]);
  });

  test("no tests: fraction 1", async () => {
    const report = await runPythonWithTests(sandbox, { code: ADD, tests: [] });
    expect(report).toMatchObject({ passed: 0, total: 0, fraction: 1 });
  });
});

describe("parseHarnessOutput", () => {
  test("keeps only lines with the nonce, in range, first one wins", () => {
    const nonce = "troupe-abc";
    const stdout = [
      "troupe-abc 0 PASS ",
      "junk troupe-abc 1 PASS",
      "troupe-abd 1 PASS",
      "troupe-abc 1 FAIL AssertionError boom",
      "troupe-abc 1 PASS ",
      "troupe-abc 7 PASS ",
      "troupe-abc x PASS",
    ].join("\n");
    expect([...parseHarnessOutput(stdout, nonce, 3).values()]).toEqual([
      { index: 0, passed: true, reason: "" },
      { index: 1, passed: false, reason: "AssertionError boom" },
    ]);
  });
});
