/**
 * The per-statement harness: exact pass counts for crafted programs, robust to garbage and exit();
 * what crosses between the program and the checker (plain data only) and what does not.
 */
import { beforeAll, describe, expect, test } from "vitest";
import { createSandbox, runPythonWithTests, type Sandbox } from "../src/index.ts";

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

  test("a program that calls os._exit before the asserts fails every one that needs it", async () => {
    const report = await runPythonWithTests(sandbox, {
      code: `${ADD}import os\nos._exit(0)\n`,
      tests: ["assert add(1, 2) == 3", "assert True"],
    });
    expect(report.tests).toEqual([
      { index: 0, passed: false, reason: "no result (the program ended: ok)" },
      { index: 1, passed: true, reason: "" },
    ]);
    expect(report.fraction).toBe(0.5);
  });

  test("a program that hangs at import time fails every statement that needs it at the wall limit", async () => {
    const report = await runPythonWithTests(sandbox, {
      code: `${ADD}import time\ntime.sleep(100)`,
      tests: ["assert True", "assert add(1, 2) == 3"],
      timeoutMs: 5_000, // the checker must start and run `assert True` inside it, also on a loaded machine
    });
    expect(report.run.status).toBe("timeout");
    expect(report.tests[0]).toEqual({ index: 0, passed: true, reason: "" });
    // Both sandboxes hit the same wall limit; whichever is killed first names it.
    expect(report.tests[1]!.reason).toMatch(/^no result \((the program ended: )?timeout\)$/);
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

describe("program and checker in separate sandboxes", () => {
  const plain =
    "(only None, bool, int, float, complex, str, bytes, list, tuple, dict and set cross from the program)";
  // Each case: the program, the statements run against it, and the reason each one gives ("": passed).
  test.each([
    {
      title: "every plain-data type crosses exactly, with its own type",
      code: [
        "def f():",
        "    return (None, True, 3, -2**100, 1.5, -0.0, float('inf'), 'é\\ud800', b'\\x00\\xff', bytearray(b'ab'),",
        "            [1, [2]], (2,), {1: 'a', (1, 2): frozenset({3})}, {3}, frozenset())",
        "def nan():",
        "    return float('nan')",
      ].join("\n"),
      tests: [
        "v = f()",
        "assert v == (None, True, 3, -2**100, 1.5, -0.0, float('inf'), 'é\\ud800', b'\\x00\\xff', b'ab', [1, [2]], (2,), {1: 'a', (1, 2): frozenset({3})}, {3}, frozenset())",
        "assert [type(x).__name__ for x in v] == ['NoneType', 'bool', 'int', 'int', 'float', 'float', 'float', 'str', 'bytes', 'bytes', 'list', 'tuple', 'dict', 'set', 'frozenset']",
        "import math; assert math.copysign(1, v[5]) == -1 and math.isnan(nan())",
      ],
      reasons: ["", "", "", ""],
    },
    {
      title:
        "complex numbers cross; a stdlib module the program imported is the checker's own, under its own name only",
      code: "import sys, os.path, unittest.mock as math\ndef c(z):\n    return z * 1j\ndef pair():\n    return (1, 2)\n",
      tests: [
        "assert c(1 - 2j) == 2 + 1j",
        "assert sys.getsizeof(pair()) == sys.getsizeof((1, 2))",
        "assert os.path.__name__ == 'posixpath'",
        "assert math.sqrt(4) == 2",
      ],
      reasons: ["", "", "", "NameError name 'math' is not defined"],
    },
    {
      title: "subclasses cross as their base type; anything else fails with the type named",
      code: [
        "import collections",
        "class Anything:",
        "    def __eq__(self, other): return True",
        "def counter(): return collections.Counter('aab')",
        "def point(): return collections.namedtuple('P', 'x y')(1, 2)",
        "def anything(): return Anything()",
        "def gen(): return (x for x in [1])",
        "def ident(x): return x",
      ].join("\n"),
      tests: [
        "assert counter() == {'a': 2, 'b': 1} and type(counter()) is dict",
        "assert point() == (1, 2) and type(point()) is tuple",
        "assert anything() == 1",
        "assert list(gen()) == [1]",
        "assert ident(lambda: 1) == 1",
      ],
      reasons: [
        "",
        "",
        `TypeError anything returned a value of type Anything, which is not plain data ${plain}`,
        `TypeError gen returned a value of type generator, which is not plain data ${plain}`,
        "TypeError cannot pass a value of type function, which is not plain data to the program's ident",
      ],
    },
    {
      title: "builtin exceptions are re-raised as themselves, others (StopIteration, SystemExit) are not",
      code: [
        "def bad(): raise ValueError('bad input')",
        "def stop(): raise StopIteration",
        "def leave(): raise SystemExit(0)",
      ].join("\n"),
      tests: [
        "try:\n    bad()\n    assert False\nexcept ValueError as e:\n    assert str(e) == 'bad input'",
        "assert list(map(lambda x: stop(), [1])) == []",
        "leave()",
      ],
      reasons: ["", "CandidateError StopIteration:", "CandidateError SystemExit: 0"],
    },
  ])("$title", async ({ code, tests, reasons }) => {
    const report = await runPythonWithTests(sandbox, { code, tests });
    expect(report.tests.map((t) => t.reason)).toEqual(reasons);
  });

  test("the program sees only its own files and a minimal environment, never the tests", async () => {
    const code = [
      "import os, sys",
      "def look():",
      "    return sorted(os.listdir('.')), sorted(os.environ), sys.stdin.read()",
    ].join("\n");
    const report = await runPythonWithTests(sandbox, {
      code,
      tests: ["assert look() == (['main.py', 'solution.py'], ['HOME', 'LANG', 'PATH', 'PWD', 'TMPDIR'], '')"],
    });
    expect(report.tests[0]).toEqual({ index: 0, passed: true, reason: "" });
  });

  test("builtins stay the checker's own unless the name is the function under test", async () => {
    const code = "def abs(x):\n    return 0\ndef sum(xs):\n    return 42\n";
    const tests = ["assert abs(-3) == 3", "assert sum([1]) == 42"];
    const plainly = await runPythonWithTests(sandbox, { code, tests });
    const named = await runPythonWithTests(sandbox, { code, tests, programNames: ["sum"] });
    expect(plainly.tests.map((t) => t.passed)).toEqual([true, false]);
    expect(named.tests.map((t) => t.passed)).toEqual([true, true]);
  });

  test("a program that ignores its time limit is killed; later statements that need it get no result", async () => {
    const code = [
      "import signal, time",
      "def slow():",
      "    signal.signal(signal.SIGALRM, signal.SIG_IGN)",
      "    time.sleep(100)",
      "def fast():",
      "    return 1",
    ].join("\n");
    const report = await runPythonWithTests(sandbox, {
      code,
      tests: ["assert fast() == 1", "slow()", "assert fast() == 1", "assert 2 + 2 == 4"],
      timeoutMs: 8000,
      perTestTimeoutMs: 300,
    });
    expect(report.tests.map((t) => t.reason)).toEqual([
      "",
      "timeout",
      "no result (the program stopped answering)",
      "",
    ]);
    expect(report.run.status).toBe("killed");
  });

  const FLOODED = "no result (the program ended: killed: it wrote more than 4 MiB on its channel)";

  test("a program that floods its channel with one endless line is killed, its calls get no result", async () => {
    const code = `${ADD}import os\nchunk = b"x" * (1 << 20)\nfor _ in range(40):\n    os.write(3, chunk)\n`;
    const report = await runPythonWithTests(sandbox, {
      code,
      tests: ["assert add(1, 2) == 3", "assert 1 < 2"],
    });
    expect(report.tests).toEqual([
      { index: 0, passed: false, reason: FLOODED },
      { index: 1, passed: true, reason: "" },
    ]);
  });

  test("answer-looking lines written before a request cannot answer it: real answers are used", async () => {
    // ~500 KB of replies for every id the checker could have counted to, written at import time.
    const code = `${ADD}import os\nos.write(3, b"".join(b'{"id": %d, "value": ["int", "0x3"]}\\n' % (i % 50) for i in range(15000)))\n`;
    const report = await runPythonWithTests(sandbox, {
      code,
      tests: ["assert add(1, 2) == 3", "assert add(1, 1) == 3"],
    });
    expect(report.tests.map((t) => t.reason)).toEqual(["", "AssertionError"]);
    expect([report.run.status, report.checker.status]).toEqual(["ok", "ok"]);
  });

  test("a program that floods past the cap gets the same report 20 times in a row", async () => {
    // ~5 MB of answer-looking lines at import time, before it answers anything. Relaying such a
    // flood on to a checker that had already finished used to make Node drop the checker's last
    // lines unread: every verdict (`no result (ok)`), or its `A` line and with it `total`.
    const code = `${ADD}import os\nos.write(3, b"".join(b'{"id": %d, "value": ["int", "0x3"]}\\n' % (i % 50) for i in range(140000)))\n`;
    const prepare =
      "tests = ['assert add(1, 2) == 3', 'assert 1 < 2', 'assert add(2, 2) == 4']\nprepared = 'split'";
    const reports: unknown[] = [];
    for (let run = 0; run < 20; run++) {
      const report = await runPythonWithTests(sandbox, { code, prepare });
      expect(report.checker.status).toBe("ok");
      const { total, passed, tests, prepared } = report;
      reports.push({ total, passed, tests, prepared });
    }
    const expected = {
      total: 3,
      passed: 1,
      tests: [
        { index: 0, passed: false, reason: FLOODED },
        { index: 1, passed: true, reason: "" },
        { index: 2, passed: false, reason: FLOODED },
      ],
      prepared: "split",
    };
    expect(reports).toEqual(Array.from({ length: 20 }, () => expected));
  });

  test("prepare runs in the checker, sets the statements and returns what it prepared", async () => {
    const report = await runPythonWithTests(sandbox, {
      code: ADD,
      prepare:
        "import json\njob = json.load(open('job.json'))\ntests = job['tests']\nprepared = {'n': len(tests)}",
      files: { "job.json": JSON.stringify({ tests: ["assert add(1, 2) == 3", "assert add(1, 2) == 4"] }) },
    });
    expect(report).toMatchObject({ passed: 1, total: 2, prepared: { n: 2 } });
  });

  test("bad requests and runners without connected runs are refused with one clear error", async () => {
    await expect(runPythonWithTests(sandbox, { code: ADD })).rejects.toThrow(
      "give exactly one of tests and prepare",
    );
    const plainRunner = { run: sandbox.run.bind(sandbox) };
    await expect(runPythonWithTests(plainRunner, { code: ADD, tests: [] })).rejects.toThrow(
      "runPythonWithTests: the runner cannot start connected runs (runConnected); use createSandbox() from @troupe/sandbox",
    );
  });
});

test("the rlimits-only fallback runs the two connected processes too", async () => {
  const unsafe = await createSandbox({ bwrap: "/nonexistent", unsafe: true });
  const report = await runPythonWithTests(unsafe, {
    code: ADD,
    tests: ["assert add(1, 2) == 3", "assert add(1, 2) == 4"],
  });
  expect(report.tests.map((t) => t.passed)).toEqual([true, false]);
  expect([report.run.isolation, report.checker.isolation]).toEqual(["unsafe-rlimits", "unsafe-rlimits"]);
});
