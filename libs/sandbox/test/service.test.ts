/**
 * The sandbox in a service process: the same results as the sandbox in this process for plain and
 * connected runs (the per-statement test harness, whose checker talks to the program over fd 3),
 * a sandbox that cannot be made refused the same way, and a service that dies rejecting its runs
 * in flight with one line, the next run starting a new one.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  createSandbox,
  createSandboxService,
  runPythonWithTests,
  type Sandbox,
  SandboxService,
  SandboxUnavailableError,
} from "../src/index.ts";

let direct: Sandbox;
let service: SandboxService;
beforeAll(async () => {
  direct = await createSandbox();
  service = await createSandboxService();
});
afterAll(() => service.close());

/** A result without its timing. */
const outcome = ({ wallMs: _wallMs, ...rest }: { wallMs: number }) => rest;

test("a plain run: stdout, stderr, exit status and limits as in this process", async () => {
  const requests = [
    { language: "python" as const, code: "import sys\nprint(6*7)\nprint('warn', file=sys.stderr)" },
    { language: "python" as const, code: "raise ValueError('bad')" },
    { language: "python" as const, code: "print(input()[::-1])", stdin: "abc\n" },
    { language: "python" as const, code: "while True: pass", limits: { wallMs: 300, cpuSeconds: 5 } },
    {
      language: "python" as const,
      code: "print(open('data.txt').read())",
      files: { "data.txt": "from a file" },
    },
  ];
  for (const request of requests) {
    expect(outcome(await service.run(request))).toEqual(outcome(await direct.run(request)));
  }
  const result = await service.run(requests[0]!);
  expect(result).toMatchObject({ status: "ok", stdout: "42\n", stderr: "warn\n", isolation: "bubblewrap" });
  await expect(service.run({ language: "python", code: "1", limits: { wallMs: -1 } })).rejects.toThrow(
    /wallMs/,
  );
});

test("connected runs: the test harness's report is the same through the service", async () => {
  const request = {
    code: "def add(a, b):\n    return a + b\ndef spin():\n    while True:\n        pass\n",
    tests: [
      "assert add(1, 2) == 3",
      "assert add(1, 1) == 3",
      "assert spin() is None",
      "assert add(2, 2) == 4",
    ],
    timeoutMs: 5000,
    perTestTimeoutMs: 300,
  };
  const through = await runPythonWithTests(service, request);
  const here = await runPythonWithTests(direct, request);
  expect(through.tests.map((t) => [t.passed, t.reason.split(" ")[0]])).toEqual([
    [true, ""],
    [false, "AssertionError"],
    [false, "timeout"],
    [true, ""],
  ]);
  expect(through.tests.map((t) => [t.passed, t.reason])).toEqual(here.tests.map((t) => [t.passed, t.reason]));
  // Many at once: the service's queue takes them as the sandbox's would.
  const reports = await Promise.all(Array.from({ length: 6 }, () => runPythonWithTests(service, request)));
  for (const report of reports) expect(report.tests.map((t) => t.passed)).toEqual([true, false, false, true]);
});

test("a sandbox that cannot be made is refused as createSandbox refuses it", async () => {
  const error = await createSandboxService({ bwrap: "/nonexistent/bwrap" }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(SandboxUnavailableError);
  expect((error as SandboxUnavailableError).reason).toContain("/nonexistent/bwrap");
});

test("a service that dies rejects its runs in flight with one line; the next run starts a new one", async () => {
  const own = new SandboxService();
  try {
    await own.start();
    const inFlight = own.run({ language: "python", code: "import time\ntime.sleep(5)" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    own.close();
    await expect(inFlight).rejects.toThrow(/^sandbox service exited \(SIGKILL\) during a run$/);
    expect(await own.run({ language: "python", code: "print('again')" })).toMatchObject({
      status: "ok",
      stdout: "again\n",
    });
  } finally {
    own.close();
  }
});
