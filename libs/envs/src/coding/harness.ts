/**
 * The test harness: runs a program and a set of assert-based tests inside a `CodeRunner` (the
 * sandbox) and reports, per test, whether it passed. Also answers the static questions the
 * tiered rewards ask (is a function defined, does it return, does `main` call `aux`, is it a mere
 * wrapper) with Python's own `ast`, so the answers match what Python itself would parse.
 *
 * Written here rather than taken from `@troupe/sandbox` because that package (when this was
 * written) had only the `CodeRunner` contract, no per-assert runner.
 *
 * How tests are split. The test text is parsed with `ast`:
 * - `check` style (HumanEval): top-level statements other than `def check(candidate)` are a
 *   prelude (imports, METADATA); the body of `check` is run statement by statement with
 *   `candidate` bound to the entry point.
 * - `asserts` style (tests a model wrote): every top-level statement is run in order.
 * A statement is a *test* when it contains an `assert` and mentions the function under test
 * (`candidate` or the entry point's name): so a `for` loop of asserts is one test, and
 * `assert True` is not a test. Other statements are setup; setup failures are reported.
 * Each test has its own time limit (SIGALRM); after `maxTimeouts` timed-out tests the rest are
 * marked failed without running (a likely infinite loop would otherwise eat the whole budget).
 *
 * Known limit: the tested code runs in the same Python process as the harness, so a hostile
 * program could forge the result line (it is tagged with a per-run nonce read from a file the
 * program could also read). The sandbox bounds what such code can do to the host; it does not
 * make the reward unforgeable. Good enough for RL on models that are not optimising against it.
 */
import { randomUUID } from "node:crypto";
import type { CodeRunner, RunStatus } from "@troupe/sandbox";
import { z } from "zod";

export type TestStyle = "check" | "asserts";

export interface FunctionQuery {
  /** Label for the report, e.g. "aux" or "main". */
  readonly label: string;
  /** Code in which to look for the function (one agent's completion). */
  readonly code: string;
  /** Name of the top-level function to look for. */
  readonly name: string;
  /** If set, also analyse how this function uses the function named here (calls, wrapper, ignored results). */
  readonly callee?: string;
}

export interface HarnessJob {
  /** The whole program: prompt, helper code, solution. */
  readonly program: string;
  /** Test text: a HumanEval `check(candidate)` module or plain asserts. */
  readonly tests: string;
  readonly style: TestStyle;
  /** Name of the function under test. */
  readonly entryPoint: string;
  /** Static questions about individual completions, answered before any test runs. */
  readonly functions?: readonly FunctionQuery[];
}

export interface HarnessOptions {
  /** Wall-clock limit of one test (one assert statement), ms. CoMLRL uses 10 s; we default lower. */
  readonly perTestTimeoutMs: number;
  /** Wall-clock limit of loading the program, ms. */
  readonly loadTimeoutMs: number;
  /** Stop running tests after this many timed out (CoMLRL: 3). */
  readonly maxTimeouts: number;
  /** Wall-clock limit of the whole sandbox run, ms. */
  readonly wallMs: number;
  /** Characters kept of each error message and of the program's own output. */
  readonly maxTextChars: number;
}

export const defaultHarnessOptions: HarnessOptions = {
  perTestTimeoutMs: 3000,
  loadTimeoutMs: 3000,
  maxTimeouts: 3,
  wallMs: 30_000,
  maxTextChars: 2000,
};

export interface TestCaseResult {
  /** Source text of the test statement. */
  readonly source: string;
  readonly passed: boolean;
  /** `ExceptionType: message` when the test failed. */
  readonly error?: string;
  readonly timedOut?: boolean;
}

export interface FunctionReport {
  readonly label: string;
  readonly name: string;
  /** A top-level `def name(` exists (found by `ast`, or by a line match when the code does not parse). */
  readonly defined: boolean;
  /** The function has a `return <value>` statement. */
  readonly hasReturn: boolean;
  /** The completion parses on its own. */
  readonly parses: boolean;
  /** The function calls `callee`. */
  readonly callsCallee: boolean;
  /** The body (docstring aside) is empty, `return <expr with callee(...)>`, or `v = callee(...); return v`. */
  readonly isWrapper: boolean;
  /** Statements that call `callee` and throw the result away, e.g. a bare `aux(x)` line. */
  readonly ignoredCalleeCalls: number;
}

export interface TestReport {
  /** The program compiles. */
  readonly syntaxOk: boolean;
  readonly syntaxError?: string;
  /** Loading the program (running its top level) or finding the entry point failed. */
  readonly loadError?: string;
  readonly tests: readonly TestCaseResult[];
  readonly passed: number;
  readonly total: number;
  readonly setupErrors: readonly string[];
  /** What the program printed (truncated). */
  readonly output: string;
  readonly functions: readonly FunctionReport[];
  /** How the sandbox run ended. */
  readonly runStatus: RunStatus;
  /** The harness itself produced no result (killed, timeout, output limit): every test counts as failed. */
  readonly harnessError?: string;
}

const TestCaseResultSchema = z.object({
  source: z.string(),
  passed: z.boolean(),
  error: z.string().optional(),
  timedOut: z.boolean().optional(),
});

const FunctionReportSchema = z.object({
  label: z.string(),
  name: z.string(),
  defined: z.boolean(),
  hasReturn: z.boolean(),
  parses: z.boolean(),
  callsCallee: z.boolean(),
  isWrapper: z.boolean(),
  ignoredCalleeCalls: z.number().int().min(0),
});

const HarnessResultSchema = z.object({
  syntaxOk: z.boolean(),
  syntaxError: z.string().optional(),
  loadError: z.string().optional(),
  tests: z.array(TestCaseResultSchema),
  setupErrors: z.array(z.string()),
  output: z.string(),
  functions: z.array(FunctionReportSchema),
});

/** Runs one harness job in the runner and parses its report. Never throws for bad model code. */
export async function runTests(
  runner: CodeRunner,
  job: HarnessJob,
  options: Partial<HarnessOptions> = {},
): Promise<TestReport> {
  const opts = { ...defaultHarnessOptions, ...options };
  const nonce = `@@troupe-result-${randomUUID()}@@`;
  const payload = {
    nonce,
    program: job.program,
    tests: job.tests,
    style: job.style,
    entryPoint: job.entryPoint,
    functions: job.functions ?? [],
    perTestTimeoutMs: opts.perTestTimeoutMs,
    loadTimeoutMs: opts.loadTimeoutMs,
    maxTimeouts: opts.maxTimeouts,
    maxTextChars: opts.maxTextChars,
  };
  const result = await runner.run({
    language: "python",
    code: HARNESS_SOURCE,
    files: { "job.json": JSON.stringify(payload) },
    limits: { wallMs: opts.wallMs },
  });
  const line = result.stdout
    .split("\n")
    .reverse()
    .find((l) => l.startsWith(nonce));
  const failed = (harnessError: string): TestReport => ({
    syntaxOk: false,
    tests: [],
    passed: 0,
    total: 0,
    setupErrors: [],
    output: result.stdout.slice(0, opts.maxTextChars),
    functions: [],
    runStatus: result.status,
    harnessError,
  });
  if (line === undefined) {
    const tail = result.stderr.slice(-opts.maxTextChars);
    return failed(`harness produced no result (run status ${result.status})${tail ? `: ${tail}` : ""}`);
  }
  const parsed = HarnessResultSchema.safeParse(JSON.parse(line.slice(nonce.length)));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return failed(`harness result malformed at ${issue.path.join(".")}: ${issue.message}`);
  }
  const r = parsed.data;
  const passed = r.tests.filter((t) => t.passed).length;
  return { ...r, passed, total: r.tests.length, runStatus: result.status };
}

/** Fraction of tests passed; 0 when there are none. */
export function passFraction(report: Pick<TestReport, "passed" | "total">): number {
  return report.total > 0 ? report.passed / report.total : 0;
}

/** The harness program. Reads `job.json`, prints one result line tagged with the nonce. */
export const HARNESS_SOURCE = String.raw`
import ast, io, json, re, signal, sys, contextlib

job = json.load(open("job.json"))
NONCE = job["nonce"]
MAX_TEXT = job["maxTextChars"]
REAL_STDOUT = sys.stdout
out = {"syntaxOk": False, "tests": [], "setupErrors": [], "output": "", "functions": []}
captured = io.StringIO()

def clip(text):
    text = str(text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."

def emit():
    out["output"] = clip(captured.getvalue())
    REAL_STDOUT.write("\n" + NONCE + json.dumps(out) + "\n")
    REAL_STDOUT.flush()

class TestTimeout(BaseException):
    pass

def on_alarm(signum, frame):
    raise TestTimeout()

signal.signal(signal.SIGALRM, on_alarm)

def run_limited(code_obj, namespace, timeout_ms):
    signal.setitimer(signal.ITIMER_REAL, timeout_ms / 1000.0)
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            exec(code_obj, namespace)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

def describe(exc):
    name = type(exc).__name__
    msg = str(exc)
    return clip(name + (": " + msg if msg else ""))

# ---- static analysis of individual completions -------------------------------------------
def calls_name(node, name):
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
               for n in ast.walk(node))

def body_without_docstring(fn):
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return [s for s in body if not isinstance(s, ast.Pass)]

def is_wrapper(fn, callee):
    body = body_without_docstring(fn)
    if not body:
        return True
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None \
            and calls_name(body[0].value, callee):
        return True
    if len(body) == 2 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1 \
            and isinstance(body[0].targets[0], ast.Name) and isinstance(body[0].value, ast.Call) \
            and isinstance(body[0].value.func, ast.Name) and body[0].value.func.id == callee \
            and isinstance(body[1], ast.Return) and isinstance(body[1].value, ast.Name) \
            and body[1].value.id == body[0].targets[0].id:
        return True
    return False

def analyse(query):
    code, name, callee = query["code"], query["name"], query.get("callee")
    report = {"label": query["label"], "name": name, "defined": False, "hasReturn": False,
              "parses": False, "callsCallee": False, "isWrapper": False, "ignoredCalleeCalls": 0}
    try:
        tree = ast.parse(code)
    except SyntaxError:
        # Fall back to a line match so a definition with a typo still counts as "defined"
        # (the structure tier and the syntax tier stay separate, as in CoMLRL).
        m = re.search(r"^def\s+" + re.escape(name) + r"\s*\(.*?(?=^\S|\Z)", code, re.S | re.M)
        if m:
            report["defined"] = True
            report["hasReturn"] = re.search(r"\breturn\s+\S", m.group(0)) is not None
        return report
    report["parses"] = True
    fns = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    if not fns:
        return report
    fn = fns[-1]
    report["defined"] = True
    report["hasReturn"] = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn))
    if callee:
        report["callsCallee"] = calls_name(fn, callee)
        report["isWrapper"] = is_wrapper(fn, callee)
        report["ignoredCalleeCalls"] = sum(
            1 for n in ast.walk(fn)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Name) and n.value.func.id == callee)
    return report

out["functions"] = [analyse(q) for q in job["functions"]]

# ---- compile and load the program --------------------------------------------------------
try:
    program = compile(job["program"], "solution.py", "exec")
    out["syntaxOk"] = True
except SyntaxError as e:
    out["syntaxError"] = clip("line %s: %s" % (e.lineno, e.msg))
    emit()
    sys.exit(0)

namespace = {"__name__": "solution"}
try:
    run_limited(program, namespace, job["loadTimeoutMs"])
except TestTimeout:
    out["loadError"] = "TimeoutError: loading the program took longer than %d ms" % job["loadTimeoutMs"]
except BaseException as e:
    out["loadError"] = describe(e)

entry = job["entryPoint"]
if "loadError" not in out and not callable(namespace.get(entry)):
    out["loadError"] = "NameError: entry point %r is not defined" % entry

# ---- split the tests ---------------------------------------------------------------------
try:
    test_tree = ast.parse(job["tests"])
except SyntaxError as e:
    out["setupErrors"].append(clip("tests do not parse: line %s: %s" % (e.lineno, e.msg)))
    emit()
    sys.exit(0)

if job["style"] == "check":
    prelude = [s for s in test_tree.body if not (isinstance(s, ast.FunctionDef) and s.name == "check")]
    checks = [s for s in test_tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
    if not checks:
        out["setupErrors"].append("tests have no def check(candidate)")
    body = checks[-1].body if checks else []
    subject = "candidate"
else:
    prelude, body, subject = [], test_tree.body, entry

def mentions(node, name):
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))

def is_test(stmt):
    return any(isinstance(n, ast.Assert) for n in ast.walk(stmt)) and mentions(stmt, subject)

def source_of(stmt):
    return clip(ast.get_source_segment(job["tests"], stmt) or ast.unparse(stmt))

def compiled(stmt):
    return compile(ast.Module(body=[stmt], type_ignores=[]), "tests.py", "exec")

test_ns = namespace
if "loadError" not in out:
    test_ns["candidate"] = namespace[entry]
for stmt in prelude:
    try:
        run_limited(compiled(stmt), test_ns, job["perTestTimeoutMs"])
    except BaseException as e:
        out["setupErrors"].append(source_of(stmt) + " -> " + describe(e))

timeouts = 0
for stmt in body:
    test = is_test(stmt)
    if not test:
        if "loadError" in out:
            continue
        try:
            run_limited(compiled(stmt), test_ns, job["perTestTimeoutMs"])
        except BaseException as e:
            out["setupErrors"].append(source_of(stmt) + " -> " + describe(e))
        continue
    result = {"source": source_of(stmt), "passed": False}
    if "loadError" in out:
        result["error"] = "not run: " + out["loadError"]
    elif timeouts >= job["maxTimeouts"]:
        result["error"] = "not run: %d tests already timed out" % timeouts
    else:
        try:
            run_limited(compiled(stmt), test_ns, job["perTestTimeoutMs"])
            result["passed"] = True
        except TestTimeout:
            timeouts += 1
            result["timedOut"] = True
            result["error"] = "TimeoutError: test took longer than %d ms" % job["perTestTimeoutMs"]
        except BaseException as e:
            result["error"] = describe(e)
    out["tests"].append(result)

emit()
`;
