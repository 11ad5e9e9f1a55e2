/**
 * The test harness: runs a program against assert-based tests inside a `CodeRunner` (the sandbox)
 * and reports, per test, whether it passed. Also answers the static questions the tiered rewards
 * ask (is a function defined, does it return, does `main` call `aux`, is it a mere wrapper) with
 * Python's own `ast`, so the answers match what Python itself would parse.
 *
 * One connected run per call, with `runPythonWithTests` from `@troupe/sandbox`: the program loads
 * in a sandbox of its own and only answers calls; a second sandbox, the checker, first analyses
 * the job (`ast.parse` / `compile` only: does the program compile, the function questions, the
 * split of the test text into statements), then runs each statement with its own time limit.
 * Calls to `candidate` reach the program over a pipe and only plain data comes back, so the
 * program cannot see the tests or forge a verdict (see that module for what crosses and why).
 *
 * How tests are split. The test text is parsed with `ast`:
 * - `check` style (HumanEval): top-level statements other than `def check(candidate)` are a
 *   prelude (imports, METADATA); the body of `check` is run statement by statement with
 *   `candidate` bound to the entry point;
 * - `asserts` style (tests a model wrote): every top-level statement is run in order.
 * A statement is a *test* when it contains an `assert` and mentions the function under test
 * (`candidate` or the entry point's name): so a `for` loop of asserts is one test, and
 * `assert True` is not a test. Other statements are setup; setup failures are reported.
 * Statements run as `ast.unparse` gives them (always valid at top level); reports show the
 * original source text.
 *
 * Two optional questions ride on the same run, after the tests:
 * - `variants`: run the same tests again against other functions of the program (mutants of a
 *   reference solution, for the tester's strict reward): before each pass `candidate` and the entry
 *   point's name are rebound to that function;
 * - `dependence`: does the entry point's result depend on `callee` (helper + main: does `aux`'s
 *   work reach main's return value)? Judged by what runs, not by the text: the checker records each
 *   call the tests make (arguments and result), then replays them against the program with `callee`
 *   swapped for a stand-in that does no work (returns its first argument). A call whose result
 *   changes, while the same call with the real `callee` still gives the recorded result, shows the
 *   dependence. A call in dead code, a result stored and never used, or an identity helper threaded
 *   through the return changes nothing. The swap runs in the program's sandbox (code we append to
 *   the program), the comparison in the checker; like any behaviour of the program, a program that
 *   inspects its own globals could tell the stand-in apart — this catches policies that do no
 *   collaboration, not code written against the probe.
 */
import { type CodeRunner, type RunStatus, runPythonWithTests, type TestOutcome } from "@troupe/sandbox";
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
  /** Static questions about individual completions, answered without running them. */
  readonly functions?: readonly FunctionQuery[];
  /**
   * Trusted source the tests may rely on: the dataset's prompt. Its top-level statements other
   * than the entry point's `def` (imports, helpers such as HumanEval/32's `poly` or /38's
   * `encode_cyclic`) run in the checker before the tests, so a test that calls a helper gets the
   * prompt's version even when the completion redefines it.
   */
  readonly trusted?: string;
  /**
   * Functions of the program to run the same tests against, each after the tests proper: the
   * entry point (and `candidate`) rebound to each in turn. Reported in `variants`, in this order.
   */
  readonly variants?: readonly string[];
  /** Ask whether the entry point's results depend on the function `callee` (see the module comment). */
  readonly dependence?: { readonly callee: string };
}

export interface HarnessOptions {
  /** Wall-clock limit of one test statement, ms. CoMLRL uses 10 s; we default lower. */
  readonly perTestTimeoutMs: number;
  /** Wall-clock limit of the whole execution run (program + all tests), ms; tests not reached fail. */
  readonly wallMs: number;
  /** Characters kept of each error message and of the program's own output. */
  readonly maxTextChars: number;
}

export const defaultHarnessOptions: HarnessOptions = {
  perTestTimeoutMs: 3000,
  wallMs: 10_000,
  maxTextChars: 2000,
};

export interface TestCaseResult {
  /** Source text of the test statement. */
  readonly source: string;
  readonly passed: boolean;
  /** Why it failed, e.g. `AssertionError`, `NameError name 'x' is not defined`, `timeout`. */
  readonly error?: string;
  readonly timedOut?: boolean;
  /** The program could no longer answer (it ended, was killed, or the run hit its wall limit). */
  readonly noResult?: boolean;
}

/** The tests run again against one of `HarnessJob.variants`. */
export interface VariantReport {
  readonly name: string;
  readonly tests: readonly TestCaseResult[];
  readonly passed: number;
  readonly total: number;
  /** The entry point could not be bound to this function (the program lacks it): no test ran. */
  readonly error?: string;
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
  /** The entry point was not defined after running the program (missing, or the program raised while loading). */
  readonly loadError?: string;
  readonly tests: readonly TestCaseResult[];
  readonly passed: number;
  readonly total: number;
  readonly setupErrors: readonly string[];
  /** What the program printed (truncated). */
  readonly output: string;
  readonly functions: readonly FunctionReport[];
  /** How the execution run ended (`ok` when the program was not run because it does not compile). */
  readonly runStatus: RunStatus;
  /** A harness run produced no result at all (killed, `os._exit`, output limit): every test counts as failed. */
  readonly harnessError?: string;
  /** One per `HarnessJob.variants` entry, in order; absent when the job has none or the program does not compile. */
  readonly variants?: readonly VariantReport[];
  /**
   * Only when the job asked `dependence`: on at least one call the tests made, replacing `callee`
   * by a stand-in that does no work changed the entry point's result.
   */
  readonly calleeMatters?: boolean;
}

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

const AnalysisSchema = z.object({
  syntaxOk: z.boolean(),
  syntaxError: z.string().optional(),
  functions: z.array(FunctionReportSchema),
  units: z.array(z.object({ source: z.string(), code: z.string(), test: z.boolean() })),
  testsError: z.string().optional(),
});
type Analysis = z.infer<typeof AnalysisSchema>;

const HarnessJobSchema = z.object({
  program: z.string({ error: "program must be a string" }),
  tests: z.string({ error: "tests must be a string" }),
  style: z.enum(["check", "asserts"], { error: "style must be 'check' or 'asserts'" }),
  entryPoint: z.string().regex(/^[A-Za-z_]\w*$/, "entryPoint must be a Python identifier"),
  trusted: z.string({ error: "trusted must be a string" }).optional(),
  variants: z
    .array(z.string().regex(/^[A-Za-z_]\w*$/, "each variant must be a Python identifier"))
    .optional(),
  dependence: z
    .object({ callee: z.string().regex(/^[A-Za-z_]\w*$/, "dependence.callee must be a Python identifier") })
    .optional(),
});

/**
 * Appended to the analysis in the checker: the statements to run — the trusted prelude and the
 * binding of `candidate` as one statement, then every unit in order; then, per variant, a
 * rebinding and every unit again; then the dependence replays and their verdict — or none when
 * the program does not compile.
 */
const PREPARE_TESTS = `
def _trusted_prelude(source, entry_point):
    try:
        tree = ast.parse(source or "")
    except (SyntaxError, ValueError):
        return ""
    keep = [s for s in tree.body
            if not (isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == entry_point)]
    return ast.unparse(ast.Module(body=keep, type_ignores=[]))

prepared = out
_entry = job["entryPoint"]
_units = [u["code"] for u in out["units"]]
_dependence = job.get("dependence")
_bind = _trusted_prelude(job.get("trusted"), _entry) + "\\n"
if _dependence:
    _bind += _dependence["recorder"] + "\\ncandidate = _troupe_recorder = _TroupeRecorder(" + _entry + ")"
else:
    _bind += "candidate = " + _entry
tests = []
if out["syntaxOk"]:
    tests = [_bind] + _units
    for _name in job["variants"]:
        # None first: a variant the program lacks must not leave the previous one bound.
        tests += ["candidate = " + _entry + " = None\\ncandidate = " + _entry + " = " + _name] + _units
    if _dependence:
        tests += ["_troupe_replay(%r)" % _dependence["budgetSeconds"]] * _dependence["replays"]
        tests += ["assert _troupe_dependence['changed'] > 0"]
`;

/** Replay statements after the tests (each gets its own time limit) and the share of it they use. */
const DEPENDENCE_REPLAYS = 3;
const DEPENDENCE_BUDGET_SHARE = 0.5;
/** Calls the recorder keeps; the replays compare at most these. */
const DEPENDENCE_MAX_CALLS = 1000;

/**
 * Checker side of the dependence question (trusted; part of the binding statement). `candidate`
 * records each call's arguments and result; `_troupe_replay` calls the entry point again, first
 * as it is (the control: a program whose answers vary on their own shows nothing) and then through
 * `_troupe_without_callee` (appended to the program, see `dependenceProbe`). A stand-in call cut
 * off by the statement's time limit counts as a change (main hung without the callee's work); a
 * control call cut off ends the replays.
 */
const DEPENDENCE_RECORDER = `
import copy as _troupe_copy, time as _troupe_time

class _TroupeRecorder:
    def __init__(self, function):
        self.function = function
        self.calls = []

    def __call__(self, *args, **kwargs):
        try:
            saved = _troupe_copy.deepcopy((args, kwargs))
        except Exception:
            saved = None
        result = self.function(*args, **kwargs)
        if saved is not None and len(self.calls) < ${DEPENDENCE_MAX_CALLS}:
            try:
                self.calls.append((saved[0], saved[1], _troupe_copy.deepcopy(result)))
            except Exception:
                pass
        return result

_troupe_dependence = {"next": 0, "compared": 0, "changed": 0, "pending": None}

def _troupe_outcome(function, args, kwargs):
    try:
        return ("value", function(*args, **kwargs))
    except Exception as error:
        return ("raised", type(error).__name__)

def _troupe_same(a, b):
    try:
        return a == b or repr(a) == repr(b)
    except Exception:
        return False

def _troupe_replay(budget):
    state = _troupe_dependence
    if state["pending"] == "stand-in":
        state["changed"] += 1
    if state["pending"] is not None:
        state["pending"] = "stopped"
        return
    if state["changed"] or "_troupe_without_callee" not in globals():
        return
    calls = _troupe_recorder.calls
    start = _troupe_time.monotonic()
    while state["next"] < len(calls) and not state["changed"] and _troupe_time.monotonic() - start < budget:
        args, kwargs, recorded = calls[state["next"]]
        state["next"] += 1
        state["pending"] = "control"
        again = _troupe_outcome(_troupe_recorder.function, args, kwargs)
        state["pending"] = "stand-in"
        alone = _troupe_outcome(_troupe_without_callee, args, kwargs)
        state["pending"] = None
        if _troupe_same(again, ("value", recorded)):
            state["compared"] += 1
            if not _troupe_same(alone, again):
                state["changed"] += 1
`;

/**
 * Appended to the program (its own sandbox) for the dependence question: the entry point called
 * with `callee` swapped, for that call only, for a stand-in that does no work: it returns its
 * first argument (a fresh object when it has none), so an identity helper is no help either.
 */
export function dependenceProbe(entryPoint: string, callee: string): string {
  return `

def _troupe_stand_in(*args, **kwargs):
    if args:
        return args[0]
    if kwargs:
        return next(iter(kwargs.values()))
    return object()

def _troupe_without_callee(*args, **kwargs):
    namespace = globals()
    missing = object()
    real = namespace.get("${callee}", missing)
    namespace["${callee}"] = _troupe_stand_in
    try:
        return namespace["${entryPoint}"](*args, **kwargs)
    finally:
        if real is missing:
            namespace.pop("${callee}", None)
        else:
            namespace["${callee}"] = real
`;
}

/** Runs one harness job in the runner and reports. Never throws for bad model code. */
export async function runTests(
  runner: CodeRunner,
  job: HarnessJob,
  options: Partial<HarnessOptions> = {},
): Promise<TestReport> {
  const checked = HarnessJobSchema.safeParse(job);
  if (!checked.success) throw new Error(`runTests: ${checked.error.issues[0]!.message}`);
  const opts = { ...defaultHarnessOptions, ...options };
  const clip = (t: string) => (t.length <= opts.maxTextChars ? t : `${t.slice(0, opts.maxTextChars)}...`);
  const empty = { tests: [], passed: 0, total: 0, setupErrors: [], output: "", functions: [] };

  // One connected run: the checker first analyses the job with `ast` (nothing the model wrote is
  // executed there), then runs the statements; the program runs in its own sandbox.
  const dependence = job.dependence
    ? {
        recorder: DEPENDENCE_RECORDER,
        budgetSeconds: (opts.perTestTimeoutMs * DEPENDENCE_BUDGET_SHARE) / 1000,
        replays: DEPENDENCE_REPLAYS,
      }
    : null;
  const report = await runPythonWithTests(runner, {
    code: job.dependence ? job.program + dependenceProbe(job.entryPoint, job.dependence.callee) : job.program,
    prepare: ANALYSIS_SOURCE + PREPARE_TESTS,
    files: {
      "job.json": JSON.stringify({
        program: job.program,
        tests: job.tests,
        style: job.style,
        entryPoint: job.entryPoint,
        functions: job.functions ?? [],
        maxTextChars: opts.maxTextChars,
        trusted: job.trusted ?? null,
        variants: job.variants ?? [],
        dependence,
      }),
    },
    programNames: [job.entryPoint],
    timeoutMs: opts.wallMs,
    perTestTimeoutMs: opts.perTestTimeoutMs,
  });
  const parsed = AnalysisSchema.safeParse(report.prepared);
  const unanswered = job.dependence ? { calleeMatters: false } : {};
  if (!parsed.success) {
    const why = clip(report.checker.stderr.trim() || report.checker.stdout.trim());
    return {
      ...empty,
      syntaxOk: false,
      runStatus: report.checker.status,
      harnessError: `test analysis failed (${report.checker.status})${why ? `: ${why}` : ""}`,
      ...unanswered,
    };
  }
  const analysis: Analysis = parsed.data;
  const setupErrors = analysis.testsError ? [analysis.testsError] : [];
  const testUnits = analysis.units.filter((u) => u.test);
  if (!analysis.syntaxOk) {
    const tests = testUnits.map((u) => ({
      source: u.source,
      passed: false,
      error: "not run: the program does not compile",
    }));
    return {
      ...empty,
      syntaxOk: false,
      ...(analysis.syntaxError !== undefined ? { syntaxError: analysis.syntaxError } : {}),
      tests,
      total: tests.length,
      setupErrors,
      functions: analysis.functions,
      runStatus: "ok",
      ...unanswered,
    };
  }

  // Statements ran in this order: the binding, the units, then per variant a rebinding and the
  // units again, then the dependence replays and their verdict (last).
  const [bind, ...outcomes] = report.tests;
  const missingOutcome: TestOutcome = { index: -1, passed: false, reason: "no result" };
  const outcomeAt = (i: number) => outcomes[i] ?? missingOutcome;
  // The program never answered (it exited or hung while loading, or the run hit its wall limit).
  const noResult = bind === undefined || bind.reason.startsWith("no result");
  const testCases = (offset: number, errors?: string[]): TestCaseResult[] => {
    const cases: TestCaseResult[] = [];
    analysis.units.forEach((unit, i) => {
      const outcome = outcomeAt(offset + i);
      if (!unit.test) {
        if (errors && !outcome.passed && !noResult) errors.push(clip(`${unit.source} -> ${outcome.reason}`));
        return;
      }
      cases.push({
        source: unit.source,
        passed: outcome.passed,
        ...(outcome.passed ? {} : { error: clip(outcome.reason.trim() || "failed") }),
        ...(outcome.reason === "timeout" ? { timedOut: true } : {}),
        ...(outcome.reason.startsWith("no result") ? { noResult: true } : {}),
      });
    });
    return cases;
  };
  const tests = testCases(0, setupErrors);
  const count = (cases: readonly TestCaseResult[]) => cases.filter((t) => t.passed).length;
  const stride = analysis.units.length + 1;
  const variants = (job.variants ?? []).map((name, v): VariantReport => {
    const offset = analysis.units.length + v * stride;
    const rebinding = outcomeAt(offset);
    if (!rebinding.passed) {
      const error = clip(`not run: could not bind ${job.entryPoint} to ${name} (${rebinding.reason.trim()})`);
      const cases = testUnits.map((u) => ({ source: u.source, passed: false, error }));
      return { name, tests: cases, passed: 0, total: cases.length, error };
    }
    const cases = testCases(offset + 1);
    return { name, tests: cases, passed: count(cases), total: cases.length };
  });
  const loadFailed = bind !== undefined && !bind.passed && !noResult;
  const runStatus = report.checker.status === "ok" ? report.run.status : report.checker.status;
  return {
    syntaxOk: true,
    ...(loadFailed
      ? {
          loadError: `NameError: entry point '${job.entryPoint}' is not defined after running the program (${bind.reason.trim()})`,
        }
      : {}),
    tests,
    passed: count(tests),
    total: tests.length,
    setupErrors,
    output: clip(report.run.stdout.trim()),
    functions: analysis.functions,
    runStatus,
    ...(noResult ? { harnessError: `the program produced no result (${bind?.reason ?? "no run"})` } : {}),
    ...(job.variants ? { variants } : {}),
    ...(job.dependence ? { calleeMatters: !noResult && report.tests.at(-1)?.passed === true } : {}),
  };
}

/**
 * What an episode keeps of a test run (in its state, so the answer of a solve can show it): the
 * counts, each test's source and outcome, and why the run failed as a whole, if it did.
 */
export interface TestSummary {
  readonly passed: number;
  readonly total: number;
  readonly cases: readonly TestCaseResult[];
  /** Syntax, load or harness error, when the program never got to the tests. */
  readonly error?: string;
}

export function testSummary(report: TestReport): TestSummary {
  const error = report.harnessError ?? report.syntaxError ?? report.loadError;
  return {
    passed: report.passed,
    total: report.total,
    cases: report.tests,
    ...(error !== undefined ? { error } : {}),
  };
}

/** Fraction of tests passed; 0 when there are none. */
export function passFraction(report: Pick<TestReport, "passed" | "total">): number {
  return report.total > 0 ? report.passed / report.total : 0;
}

/**
 * The analysis, run in the checker's sandbox before the tests. Reads `job.json` and leaves its
 * answer in `out`. It parses and compiles the model's code but never executes it.
 */
export const ANALYSIS_SOURCE = String.raw`
import ast, json, re

job = json.load(open("job.json"))
MAX_TEXT = job["maxTextChars"]
out = {"syntaxOk": False, "functions": [], "units": []}

def clip(text):
    text = str(text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."

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
    except (SyntaxError, ValueError):
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

try:
    compile(job["program"], "solution.py", "exec")
    out["syntaxOk"] = True
except (SyntaxError, ValueError) as e:
    out["syntaxError"] = clip("line %s: %s" % (getattr(e, "lineno", "?"), getattr(e, "msg", str(e))))

try:
    tree = ast.parse(job["tests"])
except (SyntaxError, ValueError) as e:
    tree = None
    out["testsError"] = clip("the tests do not parse: line %s: %s" % (getattr(e, "lineno", "?"), getattr(e, "msg", str(e))))

if tree is not None:
    if job["style"] == "check":
        checks = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
        prelude = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name == "check")]
        if not checks:
            out["testsError"] = "the tests have no def check(candidate)"
        units, subject = prelude + (checks[-1].body if checks else []), "candidate"
    else:
        units, subject = tree.body, job["entryPoint"]
    prelude_count = len(prelude) if job["style"] == "check" else 0
    for i, stmt in enumerate(units):
        has_assert = any(isinstance(n, ast.Assert) for n in ast.walk(stmt))
        mentions = any(isinstance(n, ast.Name) and n.id == subject for n in ast.walk(stmt))
        source = ast.get_source_segment(job["tests"], stmt) or ast.unparse(stmt)
        out["units"].append({"source": clip(source), "code": ast.unparse(stmt),
                             "test": i >= prelude_count and has_assert and mentions})

`;
