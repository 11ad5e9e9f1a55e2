/**
 * `runPythonWithTests`: run a model-written program, then each assert statement against it, and
 * count how many pass (the coding environments' "fraction of asserts passed").
 *
 * One sandbox run for all asserts. A harness (`harness.py`) reads a fresh random nonce from stdin,
 * executes the program in a namespace (catching SystemExit and every other exception), then runs
 * each assert in that namespace under its own time limit, and after each one writes
 * `<nonce> <index> PASS|FAIL <reason>` straight to fd 1 with `os.write`. Only lines carrying the
 * nonce count, so printed garbage, a replaced `print`, or a closed `sys.stdout` cannot add or hide
 * results; asserts that produced no line (the program called `os._exit`, hung, crashed the
 * interpreter) count as failed.
 *
 * Limit of the guarantee: the program runs in the harness's interpreter, so a program written to
 * attack *this* harness could dig the nonce out of memory (e.g. via `gc` or frame objects) and
 * print fake PASS lines. That takes deliberate introspection; the nonce defeats guessing, replaying
 * lines from a previous run, and accidental matches.
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { CodeRunner, RunResult, SandboxLimits } from "./types.ts";

const HARNESS = String.raw`
import os, signal, sys
_nonce = sys.stdin.readline().strip()
_write = os.write
_per_test_s = __PER_TEST_SECONDS__
_as_main = __AS_MAIN__

class _TestTimeout(BaseException):
    pass

def _on_alarm(signum, frame):
    raise _TestTimeout()

def _report(index, verdict, reason=""):
    line = "\n%s %d %s %s\n" % (_nonce, index, verdict, reason.replace("\n", " ")[:200])
    try:
        _write(1, line.encode("utf-8", "replace"))
    except OSError:
        pass

with open("tests.py", encoding="utf-8") as _f:
    _tests = _f.read().split("\n#--troupe-test--\n")
with open("solution.py", encoding="utf-8") as _f:
    _source = _f.read()
_namespace = {"__name__": "__main__" if _as_main else "solution", "__builtins__": __builtins__}
try:
    exec(compile(_source, "solution.py", "exec"), _namespace)
except BaseException as error:  # SystemExit from exit(), errors at import time: run the asserts anyway
    pass

for _index, _test in enumerate(_tests):
    try:
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, _per_test_s)
        try:
            exec(compile(_test, "test_%d" % _index, "exec"), _namespace)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        _report(_index, "PASS")
    except _TestTimeout:
        _report(_index, "FAIL", "timeout")
    except AssertionError as error:
        _report(_index, "FAIL", "AssertionError " + str(error))
    except BaseException as error:
        _report(_index, "FAIL", type(error).__name__ + " " + str(error))
os._exit(0)
`;

/** Separator between asserts in tests.py; an assert containing it is rejected. */
const TEST_SEPARATOR = "\n#--troupe-test--\n";

export const PythonTestsRequestSchema = z.object({
  code: z.string({ error: "code must be a string" }),
  tests: z.array(z.string().min(1, "each test must be a non-empty assert statement")).readonly(),
  timeoutMs: z.number().int().positive("timeoutMs must be a positive integer").optional(),
  perTestTimeoutMs: z.number().int().positive("perTestTimeoutMs must be a positive integer").optional(),
  asMain: z.boolean().optional(),
  limits: z.record(z.string(), z.number()).optional(),
});

export interface PythonTestsRequest {
  readonly code: string;
  /** Assert statements (or any python snippets) run after the code, in its namespace. */
  readonly tests: readonly string[];
  /** Wall clock for the whole run. Default 10 000 ms. */
  readonly timeoutMs?: number;
  /** Wall clock of one assert (SIGALRM inside the harness). Default: `timeoutMs`. */
  readonly perTestTimeoutMs?: number;
  /** Run the code with `__name__ == "__main__"` (its main block runs, with empty stdin). Default false. */
  readonly asMain?: boolean;
  readonly limits?: Partial<SandboxLimits>;
}

export interface TestOutcome {
  readonly index: number;
  readonly passed: boolean;
  /** Why it failed: `AssertionError ...`, `NameError ...`, `timeout`, or `no result (<status>)`. */
  readonly reason: string;
}

export interface PythonTestsReport {
  readonly passed: number;
  readonly total: number;
  /** passed / total (1 when there are no tests). */
  readonly fraction: number;
  readonly tests: readonly TestOutcome[];
  /** The sandbox run of the harness (stdout still contains the result lines). */
  readonly run: RunResult;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** Parses `<nonce> <index> PASS|FAIL <reason>` lines; later lines for an index do not override. */
export function parseHarnessOutput(stdout: string, nonce: string, total: number): Map<number, TestOutcome> {
  const found = new Map<number, TestOutcome>();
  for (const line of stdout.split("\n")) {
    if (!line.startsWith(`${nonce} `)) continue;
    const match = /^(\d+) (PASS|FAIL) ?(.*)$/.exec(line.slice(nonce.length + 1));
    if (match === null) continue;
    const index = Number(match[1]);
    if (index >= total || found.has(index)) continue;
    found.set(index, { index, passed: match[2] === "PASS", reason: (match[3] ?? "").trim() });
  }
  return found;
}

export async function runPythonWithTests(
  runner: CodeRunner,
  request: PythonTestsRequest,
): Promise<PythonTestsReport> {
  PythonTestsRequestSchema.parse(request);
  request.tests.forEach((test, i) => {
    if (test.includes(TEST_SEPARATOR)) throw new Error(`tests[${i}] contains the harness separator line`);
  });
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const perTestSeconds = (request.perTestTimeoutMs ?? timeoutMs) / 1000;
  const nonce = `troupe-${randomBytes(16).toString("hex")}`;
  const run = await runner.run({
    language: "python",
    code: HARNESS.replace("__PER_TEST_SECONDS__", String(perTestSeconds)).replace(
      "__AS_MAIN__",
      request.asMain === true ? "True" : "False",
    ),
    stdin: `${nonce}\n`,
    files: { "solution.py": request.code, "tests.py": request.tests.join(TEST_SEPARATOR) },
    limits: { wallMs: timeoutMs, cpuSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)), ...request.limits },
  });
  const found = parseHarnessOutput(run.stdout, nonce, request.tests.length);
  const tests = request.tests.map(
    (_, index) => found.get(index) ?? { index, passed: false, reason: `no result (${run.status})` },
  );
  const passed = tests.filter((t) => t.passed).length;
  const total = tests.length;
  return { passed, total, fraction: total === 0 ? 1 : passed / total, tests, run };
}
