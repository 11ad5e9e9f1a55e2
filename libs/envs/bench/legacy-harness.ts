/**
 * The coding reward's PREVIOUS path, kept only so the bench can measure it side by side with the
 * current one and show the completions that fooled it. Do not use it anywhere else: it runs the
 * program with `exec` inside the checker's own interpreter, so a completion can read the tests,
 * the nonce and the verdict writer (see the sandbox's `python-tests.ts` for why that was replaced).
 *
 * Same flow as before: one sandbox run for the `ast` analysis, one for program + asserts, results
 * read from nonce-tagged lines on stdout.
 */
import { randomBytes } from "node:crypto";
import type { CodeRunner } from "@troupe/sandbox";
import { ANALYSIS_SOURCE, type HarnessJob } from "../src/coding/index.ts";

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

const TEST_SEPARATOR = "\n#--troupe-test--\n";

interface Unit {
  readonly code: string;
  readonly test: boolean;
}

/** Passed and total test statements of one job under the previous design (analysis + one run). */
export async function legacyRunTests(
  runner: CodeRunner,
  job: HarnessJob,
  options: { perTestTimeoutMs?: number; wallMs?: number } = {},
): Promise<{ passed: number; total: number }> {
  const wallMs = options.wallMs ?? 10_000;
  const perTestMs = options.perTestTimeoutMs ?? 3000;
  const analysisRun = await runner.run({
    language: "python",
    code: `${ANALYSIS_SOURCE}\nprint(json.dumps(out))\n`,
    files: {
      "job.json": JSON.stringify({ ...job, functions: [], maxTextChars: 2000 }),
    },
    limits: { wallMs },
  });
  const analysis = JSON.parse(analysisRun.stdout.trim().split("\n").at(-1) ?? "") as {
    syntaxOk: boolean;
    units: Unit[];
  };
  const testIndexes = analysis.units.flatMap((u, i) => (u.test ? [i] : []));
  if (!analysis.syntaxOk) return { passed: 0, total: testIndexes.length };
  const tests = [`candidate = ${job.entryPoint}`, ...analysis.units.map((u) => u.code)];
  const nonce = `troupe-${randomBytes(16).toString("hex")}`;
  const run = await runner.run({
    language: "python",
    code: HARNESS.replace("__PER_TEST_SECONDS__", String(perTestMs / 1000)).replace("__AS_MAIN__", "False"),
    stdin: `${nonce}\n`,
    files: { "solution.py": job.program, "tests.py": tests.join(TEST_SEPARATOR) },
    limits: { wallMs, cpuSeconds: Math.max(1, Math.ceil(wallMs / 1000)) },
  });
  const passedIndexes = new Set<number>();
  const seen = new Set<number>();
  for (const line of run.stdout.split("\n")) {
    const match = new RegExp(`^${nonce} (\\d+) (PASS|FAIL)`).exec(line);
    if (match === null) continue;
    const index = Number(match[1]);
    if (seen.has(index)) continue; // the first line for an index wins, as before
    seen.add(index);
    if (match[2] === "PASS") passedIndexes.add(index);
  }
  // Statement i of the units is tests[i + 1] (tests[0] binds `candidate`).
  const passed = testIndexes.filter((i) => passedIndexes.has(i + 1)).length;
  return { passed, total: testIndexes.length };
}
