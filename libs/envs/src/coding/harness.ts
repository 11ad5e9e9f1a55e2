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
 * Two optional questions:
 * - `variants`: the same tests against other functions of the program (mutants of a reference
 *   solution, for the tester's strict reward), each in a fresh run of its own with `candidate` and
 *   the entry point's name bound to that function: nothing a pass binds, imports or writes reaches
 *   the next (a tester that keeps the first pass's function to compare against finds none);
 * - `dependence`: does the entry point's answer need `callee`'s work (helper + main: does `aux`'s
 *   work reach main's answer, does `aux` do any, is main a wrapper)? Judged by what runs, in two
 *   counterfactual runs after a tests' run in which every test passed (`askDependence`).
 */
import { randomInt } from "node:crypto";
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
  /**
   * When the variants run: `always` (beside the tests proper, the default), or `some-test-passes`:
   * after them, and only when at least one test passed on the program. A test that fails on the
   * program rejects nothing (a tester's strict reward counts a wrong program as rejected only by an
   * assert the reference passes), so the variants' runs could change nothing: each is reported not
   * run, its cases without a result. The tester's asserts at toy scale mostly fail on the reference,
   * and the variants were most of a coder + tester step's sandbox runs.
   */
  readonly variantsWhen?: "always" | "some-test-passes";
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
  /** No test ran: the entry point could not be bound to this function (the program lacks it), or (`variantsWhen: some-test-passes`) no test passed on the program. */
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
   * Only when the job asked `dependence`: on at least one call the tests made, a counterfactual
   * run in which `callee` returned a blank of its result's type answered another value
   * (`calleeUse.matters`).
   */
  readonly calleeMatters?: boolean;
  /** Only when the job asked `dependence`: the whole answer (`CalleeUse`). */
  readonly calleeUse?: CalleeUse;
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
  standInProgram: z.string().nullable().optional(),
});
type Analysis = z.infer<typeof AnalysisSchema>;

/**
 * What the counterfactual runs found about the entry point's use of `callee` (see `askDependence`).
 * Only asked when every test passed; otherwise `skipped` says why and nothing counts.
 */
export interface CalleeUse {
  /** Replayed calls whose control answer equals the tests' run's: the ones compared. */
  readonly compared: number;
  /** Compared calls whose answer became another value when the callee returned a blank. */
  readonly changed: number;
  /** Compared calls on which the stand-in run raised or timed out (no evidence either way). */
  readonly failed: number;
  /** The callee's work reaches the answer: `changed > 0`. */
  readonly matters: boolean;
  /** Why the callee does no work, when it does none (judged from the control run's calls of it). */
  readonly noWork?: "not called" | "returns its argument" | "returns the same value for every input";
  /** On every compared call the entry point's answer is one of the callee's answers in that call. */
  readonly wrapper: boolean;
  /** Why the question was not asked, or had no answer. */
  readonly skipped?: string;
}

const HarnessJobSchema = z.object({
  program: z.string({ error: "program must be a string" }),
  tests: z.string({ error: "tests must be a string" }),
  style: z.enum(["check", "asserts"], { error: "style must be 'check' or 'asserts'" }),
  entryPoint: z.string().regex(/^[A-Za-z_]\w*$/, "entryPoint must be a Python identifier"),
  trusted: z.string({ error: "trusted must be a string" }).optional(),
  variants: z
    .array(z.string().regex(/^[A-Za-z_]\w*$/, "each variant must be a Python identifier"))
    .optional(),
  variantsWhen: z
    .enum(["always", "some-test-passes"], { error: "variantsWhen must be 'always' or 'some-test-passes'" })
    .optional(),
  dependence: z
    .object({ callee: z.string().regex(/^[A-Za-z_]\w*$/, "dependence.callee must be a Python identifier") })
    .optional(),
});

/**
 * Appended to the analysis in the checker: the statements to run — the trusted prelude and the
 * binding of `candidate` (to the entry point, or to `bindTo` for a variant's run) as one statement,
 * then every unit in order — or none when the program does not compile. With `dependence`, the
 * binding also installs the call recorder (`candidate` records each call: arguments and result).
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
_target = job.get("bindTo") or _entry
_bind = _trusted_prelude(job.get("trusted"), _entry) + "\\n"
if job.get("bindTo"):
    # A variant's run: the entry point's name means the variant, for the tests and \`candidate\`.
    _bind += _entry + " = " + _target + "\\n"
if job.get("dependence"):
    _bind += job["dependence"]["recorder"] + "\\ncandidate = _troupe_recorder = _TroupeRecorder(" + _target + ")"
else:
    _bind += "candidate = " + _target
tests = [_bind] + [u["code"] for u in out["units"]] if out["syntaxOk"] else []
`;

/** Calls of the callee the probe run repeats with blanked arguments. */
const PROBE_MAX_CALLS = 20;

/** Calls the recorder keeps, and the most the counterfactual runs replay (a random sample). */
const DEPENDENCE_MAX_CALLS = 200;

/**
 * Checker side of the tests' run when `dependence` is asked (trusted; part of the binding
 * statement): `candidate` records each call's arguments and result, returned by `collect`.
 */
const DEPENDENCE_RECORDER = `
import copy as _troupe_copy

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
        if saved is not None and len(self.calls) < ${DEPENDENCE_MAX_CALLS * 5}:
            try:
                self.calls.append([_troupe_encode(saved[0]), _troupe_encode(saved[1]), _troupe_encode(result)])
            except Exception:
                pass
        return result
`;

/**
 * What the checker's side of every run after the tests' starts with: the calls of `calls.json`
 * (codec-encoded, each `[args, kwargs, result]`) decoded, and equality as the comparisons use it.
 */
const CALLS_PRELUDE = `
import json as _troupe_json
_troupe_calls = [[_troupe_decode(part) for part in call] for call in _troupe_json.load(open("calls.json"))]

def _troupe_same(a, b):
    try:
        return bool(a == b) or repr(a) == repr(b)
    except Exception:
        return False
`;

/**
 * The checker's side of a counterfactual run (see `askDependence`): the binding statement, one
 * statement per replayed call, and the `collect` expression. `calls.json` holds the calls, each
 * `[args, kwargs, expected]` (codec-encoded): in the control run the answer of the tests' run, in
 * the stand-in run the control run's answer. Each call's callee log is read before (to drop what a
 * cut-off call left) and after it.
 */
const REPLAY_BIND = `${CALLS_PRELUDE}
_troupe_outcomes = {}
_troupe_log = _troupe_callee_log

def _troupe_replay(i):
    args, kwargs, expected = _troupe_calls[i]
    _troupe_log()
    try:
        value = candidate(*args, **kwargs)
        outcome = {"value": _troupe_encode(value), "same": _troupe_same(value, expected)}
    except Exception as error:
        value, outcome = None, {"raised": type(error).__name__, "same": False}
    log = _troupe_log()
    outcome["wrapper"] = "value" in outcome and any(entry[4] and _troupe_same(value, entry[2]) for entry in log)
    # The argument positions aux's result equals on every call of this main call (None: no call,
    # or a result that is not plain data). A selector (return a or b) matches different positions
    # on different calls; an identity helper matches the same one on all of them.
    positions = None
    for entry in log:
        arguments = [(str(k), a) for k, a in enumerate(entry[0] or ())] + [("k:" + k, a) for k, a in (entry[1] or {}).items()]
        here = {key for key, arg in arguments if entry[4] and _troupe_same(entry[2], arg)}
        positions = here if positions is None else positions & here
    outcome["passPositions"] = sorted(positions) if positions is not None and all(entry[4] for entry in log) else None
    outcome["calleeResults"] = [_troupe_encode(entry[2]) for entry in log]
    outcome["inPlace"] = any(entry[3] for entry in log)
    outcome["unplain"] = not all(entry[4] for entry in log)
    outcome["calleeCallsSeen"] = [[_troupe_encode(entry[0] or ()), _troupe_encode(entry[1] or {}), _troupe_encode(entry[2])]
                                  for entry in log if entry[4] and entry[0] is not None and entry[1] is not None]
    _troupe_outcomes[i] = outcome

def _troupe_distinct(values):
    kept = []
    for value in values:
        if not any(_troupe_same(value, seen) for seen in kept):
            kept.append(value)
    return len(kept)

def _troupe_summary():
    compared = [i for i in sorted(_troupe_outcomes) if _troupe_outcomes[i]["same"]]
    results = [_troupe_decode(r) for i in compared for r in _troupe_outcomes[i]["calleeResults"]]
    passthrough = None
    for i in compared:
        here = _troupe_outcomes[i]["passPositions"]
        passthrough = set() if here is None else set(here) if passthrough is None else passthrough & set(here)
    return {
        "outcomes": {str(i): {k: v for k, v in o.items() if k not in ("calleeResults", "calleeCallsSeen", "passPositions")}
                     for i, o in _troupe_outcomes.items()},
        "passthrough": bool(passthrough),
        "calleeCalls": len(results),
        "calleeInPlace": any(_troupe_outcomes[i]["inPlace"] for i in compared),
        "calleeUnplain": any(_troupe_outcomes[i]["unplain"] for i in compared),
        "calleeDistinct": _troupe_distinct(results),
        "expectedDistinct": _troupe_distinct([_troupe_calls[i][2] for i in compared]),
        "calleeCallsSeen": [c for i in compared for c in _troupe_outcomes[i]["calleeCallsSeen"]][:${PROBE_MAX_CALLS}],
    }
`;

/**
 * The checker's side of the probe run (see `askDependence`): the callee called directly, on each
 * recorded call's arguments blanked (`blank`: same types and shapes, no content); a call whose
 * blanked arguments equal its real ones is no evidence. `collect` returns how many calls were
 * evidence and on how many the callee answered the same value as with its real arguments.
 */
const PROBE_BIND = `${CALLS_PRELUDE}
_troupe_probe_results = {"evidence": 0, "same": 0}

def _troupe_probe(i):
    args, kwargs, result = _troupe_calls[i]
    blank_args, blank_kwargs = _troupe_blank(args), _troupe_blank(kwargs)
    if repr((blank_args, blank_kwargs)) == repr((args, kwargs)):
        return
    try:
        value = _troupe_callee_under_probe(*blank_args, **blank_kwargs)
    except Exception:
        return
    _troupe_probe_results["evidence"] += 1
    _troupe_probe_results["same"] += _troupe_same(value, result)
`;

const ProbeSummarySchema = z.object({ evidence: z.number().int().min(0), same: z.number().int().min(0) });

/** The summary the replay's `collect` returns. */
const ReplaySummarySchema = z.object({
  outcomes: z.record(
    z.string(),
    z.object({
      value: z.unknown().optional(),
      raised: z.string().optional(),
      same: z.boolean(),
      wrapper: z.boolean(),
      inPlace: z.boolean(),
      unplain: z.boolean(),
    }),
  ),
  passthrough: z.boolean(),
  calleeCalls: z.number().int().min(0),
  calleeInPlace: z.boolean(),
  calleeUnplain: z.boolean(),
  calleeCallsSeen: z.array(z.tuple([z.unknown(), z.unknown(), z.unknown()])),
  calleeDistinct: z.number().int().min(0),
  expectedDistinct: z.number().int().min(0),
});

/** A recorded call, codec-encoded: `[args, kwargs, result]`. */
const RecordedCallsSchema = z.array(z.tuple([z.unknown(), z.unknown(), z.unknown()]));
type RecordedCall = z.infer<typeof RecordedCallsSchema>[number];

/** A random order of `n` items (crypto: the program must not be able to predict it). */
function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * The counterfactual question (`dependence`), asked after a tests' run in which every test passed.
 * Two more runs, each a fresh pair of processes on the program with the callee's `def` rewritten
 * to run through the sandbox's callee hook (`standInProgram`, from the analysis): the **control**
 * (the callee's real results) and the **stand-in** (a blank of the same type and shape). Both
 * replay the same random sample of the tests' recorded calls in the same random order, so the two
 * runs differ in nothing but what the callee returns. Per call:
 * - compared: the control's answer equals the tests' run's (a program whose answers vary by
 *   themselves shows nothing);
 * - changed: the stand-in's answer is another *value* (a raise or a time-out is not counted: a
 *   blank can break code that does not need the callee's work, e.g. `r + aux(x)[0] * 0`).
 * From the control run's callee log: no work when the callee is never called, or (unless it changes
 * its arguments in place) returns the same one of its arguments on every call (a selector that
 * returns `a` on one call and `b` on another does work), or returns the same plain
 * value on every compared call while the expected answers differ (when they do not: while a probe
 * run finds it answers the same with its arguments blanked); a wrapper when the entry point's answer is one of the callee's answers in that
 * call on every compared call.
 */
async function askDependence(
  runner: CodeRunner,
  job: HarnessJob,
  standInProgram: string,
  recorded: readonly RecordedCall[],
  opts: HarnessOptions,
): Promise<CalleeUse> {
  const calls = shuffled(recorded).slice(0, DEPENDENCE_MAX_CALLS);
  const replay = async (mode: "real" | "blank", replayed: readonly RecordedCall[]) => {
    const collected = await runOnCalls(runner, standInProgram, opts, {
      mode,
      bind: `${REPLAY_BIND}\ncandidate = ${job.entryPoint}`,
      step: "_troupe_replay",
      collect: "_troupe_summary()",
      calls: replayed,
      name: job.entryPoint,
    });
    const summary = ReplaySummarySchema.safeParse(collected);
    return summary.success ? summary.data : null;
  };
  const control = await replay("real", calls);
  if (control === null) return { ...NO_USE, skipped: "the control run gave no answer" };
  const compared = calls.flatMap((call, i) => {
    const outcome = control.outcomes[String(i)];
    return outcome?.same ? [{ call, outcome }] : [];
  });
  if (compared.length === 0) return { ...NO_USE, skipped: "no call gave the tests' answer again" };
  const standIn = await replay(
    "blank",
    compared.map(({ call, outcome }) => [call[0], call[1], outcome.value] as RecordedCall),
  );
  if (standIn === null)
    return { ...NO_USE, compared: compared.length, skipped: "the stand-in run gave no answer" };
  const outcomes = compared.map((_, i) => standIn.outcomes[String(i)]);
  const changed = outcomes.filter((o) => o !== undefined && o.value !== undefined && !o.same).length;
  const failed = outcomes.filter((o) => o === undefined || o.value === undefined).length;
  // A callee that changes its arguments in place works through them, whatever it returns.
  const oneValue = !control.calleeInPlace && !control.calleeUnplain && control.calleeDistinct === 1;
  const noWork: CalleeUse["noWork"] =
    control.calleeCalls === 0
      ? "not called"
      : control.calleeInPlace
        ? undefined
        : control.passthrough
          ? "returns its argument"
          : oneValue &&
              (control.expectedDistinct > 1 ||
                (await sameWhateverItsArguments(runner, job, standInProgram, control.calleeCallsSeen, opts)))
            ? "returns the same value for every input"
            : undefined;
  return {
    compared: compared.length,
    changed,
    failed,
    matters: changed > 0,
    ...(noWork !== undefined ? { noWork } : {}),
    wrapper: compared.every(({ outcome }) => outcome.wrapper),
  };
}

/**
 * The callee gave one value on every compared call, and the expected answers do not vary (the
 * tests make one call, or all expect the same answer): a probe run (fresh processes, the control's
 * program) calls it directly on each of its recorded calls' arguments blanked. True when it answered
 * the same value every time it could be asked (its result does not depend on its arguments).
 */
async function sameWhateverItsArguments(
  runner: CodeRunner,
  job: HarnessJob,
  standInProgram: string,
  calls: readonly RecordedCall[],
  opts: HarnessOptions,
): Promise<boolean> {
  if (calls.length === 0 || !job.dependence) return false;
  const collected = await runOnCalls(runner, standInProgram, opts, {
    mode: "real",
    bind: `${PROBE_BIND}\n_troupe_callee_under_probe = ${job.dependence.callee}`,
    step: "_troupe_probe",
    collect: "_troupe_probe_results",
    calls,
    name: job.dependence.callee,
  });
  const summary = ProbeSummarySchema.safeParse(collected);
  return summary.success && summary.data.evidence > 0 && summary.data.same === summary.data.evidence;
}

/**
 * One run after the tests' (fresh processes, the rewritten program, the callee hook in `mode`):
 * the binding statement, then `step(i)` for each of `calls` (given to the checker as `calls.json`),
 * then `collect`'s value; undefined when it gave none.
 */
async function runOnCalls(
  runner: CodeRunner,
  program: string,
  opts: HarnessOptions,
  run: {
    readonly mode: "real" | "blank";
    readonly bind: string;
    readonly step: string;
    readonly collect: string;
    readonly calls: readonly RecordedCall[];
    /** The program's function the statements call (taken from it even if it shadows a builtin). */
    readonly name: string;
  },
): Promise<unknown> {
  const report = await runPythonWithTests(runner, {
    code: program,
    calleeMode: run.mode,
    tests: [run.bind, ...run.calls.map((_, i) => `${run.step}(${i})`)],
    collect: run.collect,
    files: { "calls.json": JSON.stringify(run.calls) },
    programNames: [run.name],
    timeoutMs: opts.wallMs,
    perTestTimeoutMs: opts.perTestTimeoutMs,
  });
  return report.collected;
}

const NO_USE: CalleeUse = { compared: 0, changed: 0, failed: 0, matters: false, wrapper: false };

/** Runs one harness job in the runner and reports. Never throws for bad model code. */
export async function runTests(
  runner: CodeRunner,
  job: HarnessJob,
  options: Partial<HarnessOptions> = {},
): Promise<TestReport> {
  const checked = HarnessJobSchema.safeParse(job);
  if (!checked.success) throw new Error(`runTests: ${checked.error.issues[0]!.message}`);
  const opts = { ...defaultHarnessOptions, ...options };
  // Every variant gets a fresh run of its own (new processes, new files): nothing the tests bound,
  // imported, stashed or wrote in one pass reaches the next.
  const runVariant = (name: string) => runOnce(runner, { ...withoutQuestions(job), bindTo: name }, opts);
  const [run, ...variantRuns] =
    job.variantsWhen === "some-test-passes"
      ? await runThenVariants(job, () => runOnce(runner, job, opts), runVariant)
      : await Promise.all([runOnce(runner, job, opts), ...(job.variants ?? []).map(runVariant)]);
  const { report, standInProgram, recorded } = run!;
  // A variant that ran no test: each of the program's tests reported failed with why.
  const notRun = (name: string, error: string, noResult?: true): VariantReport => {
    const cases = report.tests.map((t) => ({
      source: t.source,
      passed: false,
      error,
      ...(noResult && { noResult }),
    }));
    return { name, tests: cases, passed: 0, total: cases.length, error };
  };
  const variants = (job.variants ?? []).map((name, v): VariantReport => {
    const variantRun = variantRuns[v];
    if (variantRun === undefined) return notRun(name, "not run: no test passes on the program", true);
    const variant = variantRun.report;
    if (variant.syntaxOk && variant.loadError === undefined && variant.harnessError === undefined)
      return { name, tests: variant.tests, passed: variant.passed, total: variant.total };
    const why = variant.loadError ?? variant.harnessError ?? variant.syntaxError ?? "no result";
    return notRun(name, `not run: could not bind ${job.entryPoint} to ${name} (${why})`);
  });
  let calleeUse: CalleeUse | undefined;
  if (job.dependence) {
    const allPassed = report.harnessError === undefined && report.total > 0 && report.passed === report.total;
    calleeUse = !allPassed
      ? { ...NO_USE, skipped: "not every test passes" }
      : standInProgram === null
        ? { ...NO_USE, skipped: `the program defines no top-level function ${job.dependence.callee}` }
        : recorded.length === 0
          ? { ...NO_USE, skipped: "the tests made no call that could be recorded" }
          : await askDependence(runner, job, standInProgram, recorded, opts);
  }
  return {
    ...report,
    ...(job.variants ? { variants } : {}),
    ...(calleeUse ? { calleeUse, calleeMatters: calleeUse.matters } : {}),
  };
}

/** `variantsWhen: some-test-passes`: the tests proper first, then every variant only when one of them passed. */
async function runThenVariants(
  job: HarnessJob,
  runProgram: () => Promise<SingleRun>,
  runVariant: (name: string) => Promise<SingleRun>,
): Promise<SingleRun[]> {
  const run = await runProgram();
  if (run.report.passed === 0) return [run];
  return [run, ...(await Promise.all((job.variants ?? []).map(runVariant)))];
}

/** The job's tests and program alone: a variant's run asks no static or dependence questions. */
function withoutQuestions({ variants: _v, functions: _f, dependence: _d, ...rest }: HarnessJob): HarnessJob {
  return rest;
}

interface SingleRun {
  readonly report: TestReport;
  /** With `dependence`: the program with the callee rewritten for the counterfactual runs; null if it has none. */
  readonly standInProgram: string | null;
  /** With `dependence`: the calls the tests made, codec-encoded. */
  readonly recorded: readonly RecordedCall[];
}

/**
 * One connected run: the checker first analyses the job with `ast` (nothing the model wrote is
 * executed there), then runs the binding and the units; the program runs in its own sandbox.
 */
async function runOnce(
  runner: CodeRunner,
  job: HarnessJob & { readonly bindTo?: string },
  opts: HarnessOptions,
): Promise<SingleRun> {
  const clip = (t: string) => (t.length <= opts.maxTextChars ? t : `${t.slice(0, opts.maxTextChars)}...`);
  const empty = { tests: [], passed: 0, total: 0, setupErrors: [], output: "", functions: [] };
  const failed = (report: TestReport): SingleRun => ({ report, standInProgram: null, recorded: [] });
  const report = await runPythonWithTests(runner, {
    code: job.program,
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
        bindTo: job.bindTo ?? null,
        dependence: job.dependence ? { callee: job.dependence.callee, recorder: DEPENDENCE_RECORDER } : null,
      }),
    },
    ...(job.dependence ? { collect: "_troupe_recorder.calls" } : {}),
    programNames: [job.entryPoint],
    timeoutMs: opts.wallMs,
    perTestTimeoutMs: opts.perTestTimeoutMs,
  });
  const parsed = AnalysisSchema.safeParse(report.prepared);
  if (!parsed.success) {
    const why = clip(report.checker.stderr.trim() || report.checker.stdout.trim());
    return failed({
      ...empty,
      syntaxOk: false,
      runStatus: report.checker.status,
      harnessError: `test analysis failed (${report.checker.status})${why ? `: ${why}` : ""}`,
    });
  }
  const analysis: Analysis = parsed.data;
  const setupErrors = analysis.testsError ? [analysis.testsError] : [];
  if (!analysis.syntaxOk) {
    const tests = analysis.units
      .filter((u) => u.test)
      .map((u) => ({ source: u.source, passed: false, error: "not run: the program does not compile" }));
    return failed({
      ...empty,
      syntaxOk: false,
      ...(analysis.syntaxError !== undefined ? { syntaxError: analysis.syntaxError } : {}),
      tests,
      total: tests.length,
      setupErrors,
      functions: analysis.functions,
      runStatus: "ok",
    });
  }

  // Statements ran in this order: the binding, then the units.
  const [bind, ...outcomes] = report.tests;
  // The program never answered (it exited or hung while loading, or the run hit its wall limit).
  const noResult = bind === undefined || bind.reason.startsWith("no result");
  const tests: TestCaseResult[] = [];
  analysis.units.forEach((unit, i) => {
    const outcome: TestOutcome = outcomes[i] ?? { index: -1, passed: false, reason: "no result" };
    if (!unit.test) {
      if (!outcome.passed && !noResult) setupErrors.push(clip(`${unit.source} -> ${outcome.reason}`));
      return;
    }
    tests.push({
      source: unit.source,
      passed: outcome.passed,
      ...(outcome.passed ? {} : { error: clip(outcome.reason.trim() || "failed") }),
      ...(outcome.reason === "timeout" ? { timedOut: true } : {}),
      ...(outcome.reason.startsWith("no result") ? { noResult: true } : {}),
    });
  });
  const loadFailed = bind !== undefined && !bind.passed && !noResult;
  const runStatus = report.checker.status === "ok" ? report.run.status : report.checker.status;
  const recorded = RecordedCallsSchema.safeParse(report.collected);
  return {
    report: {
      syntaxOk: true,
      ...(loadFailed
        ? {
            loadError: `NameError: entry point '${job.bindTo ?? job.entryPoint}' is not defined after running the program (${bind.reason.trim()})`,
          }
        : {}),
      tests,
      passed: tests.filter((t) => t.passed).length,
      total: tests.length,
      setupErrors,
      output: clip(report.run.stdout.trim()),
      functions: analysis.functions,
      runStatus,
      ...(noResult ? { harnessError: `the program produced no result (${bind?.reason ?? "no run"})` } : {}),
    },
    standInProgram: analysis.standInProgram ?? null,
    recorded: recorded.success ? recorded.data : [],
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

def stand_in_program(source, callee):
    """The program with the last top-level def of callee rewritten to run through the sandbox's
    callee hook: the same name and signature, the original function nested inside it (recursion
    still reaches the original), every call going to _troupe_callee(original, args, kwargs)."""
    tree = ast.parse(source)
    at = [i for i, node in enumerate(tree.body) if isinstance(node, ast.FunctionDef) and node.name == callee]
    if not at:
        return None
    original = tree.body[at[-1]]
    params = original.args
    positional = [a.arg for a in params.posonlyargs + params.args]
    if params.vararg:
        positional.append("*" + params.vararg.arg)
    keywords = ["%r: %s" % (a.arg, a.arg) for a in params.kwonlyargs]
    if params.kwarg:
        keywords.append("**" + params.kwarg.arg)
    inner = "\n".join("    " + line for line in ast.unparse(original).splitlines())
    outer = "def %s(%s):\n%s\n    return _troupe_callee(%s, (%s), {%s})\n" % (
        callee, ast.unparse(params), inner, callee,
        "".join(p + ", " for p in positional), ", ".join(keywords))
    tree.body[at[-1]] = ast.parse(outer).body[0]
    return ast.unparse(tree)

try:
    compile(job["program"], "solution.py", "exec")
    out["syntaxOk"] = True
    if job.get("dependence"):
        out["standInProgram"] = stand_in_program(job["program"], job["dependence"]["callee"])
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
