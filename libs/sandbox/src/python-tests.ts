/**
 * `runPythonWithTests`: run a model-written program, then each test statement against it, and
 * count how many pass (the coding environments' "fraction of asserts passed").
 *
 * Two processes, each in its own sandbox (own pid/user namespaces, own tmpfs, no shared memory):
 *
 * - the PROGRAM process loads the untrusted code and then only answers requests on fd 3:
 *   "call function `name` with these arguments", "what is global `name`". It never receives the
 *   tests, a nonce or anything of the checker: there is nothing in its files, environment, stdin
 *   or address space to steal.
 * - the CHECKER process runs the test statements. It never executes the program: every free name a
 *   statement uses that the checker does not define (`candidate`, the entry point, a helper) is
 *   fetched from the program — a callable becomes a proxy whose calls are forwarded, anything else
 *   must be plain data. Results come back as plain data in a tagged JSON (`CODEC`, below), decoded
 *   by the checker into fresh builtins: an object with a rigged `__eq__`, a patched `isinstance`
 *   or builtin, a frame or `gc` trick — none of it can cross, because only data crosses.
 *
 * We (Node) relay between the two: the checker's `C` requests go to the program, the program's reply
 * to the request out goes back prefixed with `P ` (its other lines are dropped; request ids are
 * random, so nothing written before a request can answer it), and the checker's verdicts (`R`
 * lines) come to us on a channel the program cannot reach. So printed "PASS" lines, forged
 * protocol lines, floods (past `MAX_PROGRAM_CHANNEL_BYTES` the program is killed), `os._exit`,
 * signals, forked children that answer later: all of it can at most make the program's own calls
 * fail, and every line of the checker is read (see `relay`).
 *
 * Time: each statement has its own limit (SIGALRM in the checker); each forwarded call carries the
 * statement's remaining time and the program interrupts itself at it (an honest slow call answers
 * `timeout` and the next statement runs normally). A program that does not answer within a short
 * grace after its statement timed out, that exits, or that dies is marked gone; every later
 * statement that needs it fails with `no result (...)`. The wall limit bounds the whole run.
 *
 * Why not something simpler: running both in one sandbox (the old design ran the program with
 * `exec` inside the checker's interpreter) leaves the checker one frame, `gc` walk or
 * `/proc/<pid>/mem` away; restricting Python in-process (audit hooks, `RestrictedPython`) has a
 * long history of escapes. Two sandboxes and a data-only protocol need no such arms race.
 *
 * Test statements themselves are trusted for the verdict they produce: dataset tests are ours,
 * and model-written asserts (the tester's) decide their own pass/fail by what they compute — the
 * program under test still reaches them only through plain data.
 */
import { StringDecoder } from "node:string_decoder";
import { z } from "zod";
import {
  type CodeRunner,
  isConnectedRunner,
  type LiveRun,
  type RunResult,
  type RunStatus,
  type SandboxLimits,
} from "./types.ts";

/**
 * The plain-data codec, shared by both sides. A value is JSON `null`, `true`, `false`, or a
 * `[tag, payload]` pair: `["int", hex]`, `["float", float.hex()]` (exact; inf and nan included),
 * `["complex", [real hex, imag hex]]`, `["str", s]`, `["bytes", base64]`, and `["list" | "tuple" | "set" | "frozenset", [items]]`,
 * `["dict", [[key, value], ...]]`. Subclasses of these (a `Counter`, a `namedtuple`, an `IntEnum`)
 * are sent as their base type; `bytearray` as bytes. Anything else — generators, class instances,
 * functions, numpy scalars — is not plain data, and the call fails with a reason naming the type.
 */
const CODEC = String.raw`
import base64 as _b64
_MAX_DEPTH = 200

class NotPlainData(Exception):
    pass

def encode(value, depth=0):
    if depth > _MAX_DEPTH:
        raise NotPlainData("data nested more than %d deep" % _MAX_DEPTH)
    if value is None or value is True or value is False:
        return value
    if isinstance(value, int):
        return ["int", hex(int.__index__(value))]
    if isinstance(value, float):
        return ["float", float.hex(value)]
    if isinstance(value, complex):
        return ["complex", [float.hex(value.real), float.hex(value.imag)]]
    if isinstance(value, str):
        return ["str", str.__str__(value)]
    if isinstance(value, (bytes, bytearray)):
        return ["bytes", _b64.b64encode(bytes(value)).decode("ascii")]
    if isinstance(value, (list, tuple, set, frozenset)):
        tag = "list" if isinstance(value, list) else "tuple" if isinstance(value, tuple) else \
            "frozenset" if isinstance(value, frozenset) else "set"
        return [tag, [encode(item, depth + 1) for item in value]]
    if isinstance(value, dict):
        return ["dict", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in dict.items(value)]]
    raise NotPlainData("a value of type %s, which is not plain data" % type(value).__name__)

def decode(data, depth=0):
    if depth > _MAX_DEPTH:
        raise NotPlainData("data nested more than %d deep" % _MAX_DEPTH)
    if data is None or data is True or data is False:
        return data
    if type(data) is not list or len(data) != 2 or type(data[0]) is not str:
        raise NotPlainData("malformed data")
    tag, payload = data
    try:
        if tag == "int" and type(payload) is str:
            return int(payload, 16)
        if tag == "float" and type(payload) is str:
            return float.fromhex(payload)
        if tag == "complex" and type(payload) is list and len(payload) == 2 \
                and type(payload[0]) is str and type(payload[1]) is str:
            return complex(float.fromhex(payload[0]), float.fromhex(payload[1]))
        if tag == "str" and type(payload) is str:
            return payload
        if tag == "bytes" and type(payload) is str:
            return _b64.b64decode(payload.encode("ascii"), validate=True)
        if tag in ("list", "tuple", "set", "frozenset") and type(payload) is list:
            items = [decode(item, depth + 1) for item in payload]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict" and type(payload) is list:
            pairs = []
            for pair in payload:
                if type(pair) is not list or len(pair) != 2:
                    raise NotPlainData("malformed dict entry")
                pairs.append((decode(pair[0], depth + 1), decode(pair[1], depth + 1)))
            return dict(pairs)
    except NotPlainData:
        raise
    except (ValueError, TypeError, OverflowError) as error:  # bad hex/base64, unhashable set item or key
        raise NotPlainData("malformed %s: %s" % (tag, error))
    raise NotPlainData("malformed data (tag %r)" % tag[:20])

def blank(value, depth=0):
    if depth > 50 or value is None:
        return None
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, complex):
        return 0j
    if isinstance(value, str):
        return ""
    if isinstance(value, (bytes, bytearray)):
        return type(value)()
    if isinstance(value, (list, tuple)):
        items = [blank(item, depth + 1) for item in value]
        if isinstance(value, list):
            return items
        try:
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        except Exception:
            return tuple(items)
    if isinstance(value, dict):
        return {key: blank(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (set, frozenset)):
        return type(value)()
    if isinstance(value, range):
        return range(0)
    if hasattr(value, "__next__"):  # a generator or another iterator: one that yields nothing
        return iter(())
    try:
        return type(value)()
    except Exception:
        return None

def read_line(fd, buffer):
    """One line from fd (without the newline), None at end of file. buffer: a bytearray we own."""
    import os
    while True:
        end = buffer.find(b"\n")
        if end >= 0:
            line = bytes(buffer[:end])
            del buffer[:end + 1]
            return line
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        buffer += chunk

def write_all(fd, data):
    import os
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
`;

/**
 * For a counterfactual run (`calleeMode`): the program's copy of the callee (the caller rewrote its
 * `def` to call this, see the coding harness) runs through `_troupe_callee`, which logs each call's
 * arguments (as they were before the call), result, and whether it changed its arguments in place,
 * and returns, by mode,
 * - `real`: the callee's own result (the control run);
 * - `blank`: a value of the same type and shape as the callee's result with no content (the
 *   stand-in run): numbers 0, `False`, `""`, `b""`, lists and tuples of the same length whose items
 *   are blanked in turn, dicts with the same keys and blank values, empty sets and ranges, an
 *   iterator that yields nothing for an iterator (a generator), `None` for `None`, and for any
 *   other type `type(result)()` or else `None`. The callee runs on a deep copy of its
 *   arguments, so work it does in place on them does not reach the caller either.
 * Both runs define the same names and run the same code; only the mode differs, so a program cannot
 * tell them apart by looking around (it can by reading the hook's own variables: that is code
 * written against the harness, which the reward's documentation names as out of reach).
 */
const CALLEE_HOOK = `
import copy as _troupe_copy
_MAX_CALLEE_LOG = 2000
_callee_entries = []

def _troupe_callee(function, args, kwargs):
    try:
        before = _troupe_copy.deepcopy((args, kwargs))
    except Exception:
        before = None
    if _CALLEE_MODE == "blank" and before is not None:
        args, kwargs = _troupe_copy.deepcopy(before)
    result = function(*args, **kwargs)
    try:
        changed_arguments = before is not None and repr((args, kwargs)) != repr(before)
    except Exception:
        changed_arguments = False
    if len(_callee_entries) < _MAX_CALLEE_LOG:
        # A copy now: main may change the result in place afterwards (sort the list aux returned).
        try:
            logged, copied = _troupe_copy.deepcopy(result), True
        except Exception:
            logged, copied = None, False
        _callee_entries.append((before, logged, changed_arguments, copied))
    return blank(result) if _CALLEE_MODE == "blank" else result

def _troupe_callee_log():
    """The calls since the last read, each [args, kwargs, result, whether it changed its arguments in
    place, whether its result is plain data]; args and kwargs as they were before the call; a part
    that is not plain data is None."""
    entries = []
    for before, result, changed_arguments, copied in _callee_entries:
        parts = []
        for part in (before[0] if before else None, before[1] if before else None, result):
            try:
                encode(part)
                parts.append(part)
            except NotPlainData:
                parts.append(None)
        entries.append(parts + [changed_arguments, copied and (parts[2] is not None or result is None)])
    del _callee_entries[:]
    return entries
`;

/**
 * The program side: loads `solution.py`, then answers requests on fd 3 until end of file. It holds
 * nothing secret: the program may read, patch or replace any of it, and only hurts its own calls.
 */
const PROGRAM_SERVER = String.raw`
import json, os, signal, sys, traceback
${CODEC}
_CHANNEL = 3
_AS_MAIN = __AS_MAIN__
_CALLEE_MODE = __CALLEE_MODE__
${CALLEE_HOOK}

class _CallTimeout(BaseException):
    pass

def _on_alarm(signum, frame):
    raise _CallTimeout()

def _reply(message):
    try:
        write_all(_CHANNEL, (json.dumps(message) + "\n").encode("utf-8", "surrogatepass"))
    except OSError:
        os._exit(0)

def _answer(namespace, request):
    ident, name = request.get("id"), request.get("name")
    if not isinstance(name, str) or name not in namespace:
        return {"id": ident, "missing": True}
    target = namespace[name]
    if request.get("op") == "get":
        if isinstance(target, type(sys)):
            return {"id": ident, "module": target.__name__}
        if callable(target):
            return {"id": ident, "callable": True}
        try:
            return {"id": ident, "value": encode(target)}
        except NotPlainData as error:
            return {"id": ident, "unplain": str(error)}
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, float(request.get("timeout", 1))))
    try:
        try:
            args = [decode(a) for a in request["args"]]
            kwargs = {k: decode(v) for k, v in request["kwargs"]}
            result = encode(target(*args, **kwargs))  # encoding a huge result counts against the call's time
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _CallTimeout:
        return {"id": ident, "timeout": True}
    except NotPlainData as error:
        return {"id": ident, "unplain": str(error)}
    except BaseException as error:
        try:
            message = str(error)[:1000]
        except BaseException:
            message = "(its message could not be read)"
        return {"id": ident, "raised": [type(error).__name__, message]}
    return {"id": ident, "value": result}

def _serve():
    namespace = {"__name__": "__main__" if _AS_MAIN else "solution", "__builtins__": __builtins__}
    if _CALLEE_MODE is not None:
        namespace["_troupe_callee"] = _troupe_callee
        namespace["_troupe_callee_log"] = _troupe_callee_log
    with open("solution.py", encoding="utf-8") as source:
        code = source.read()
    try:
        exec(compile(code, "solution.py", "exec"), namespace)
    except BaseException:  # SystemExit, an error while loading: answer what is defined anyway
        traceback.print_exc()
    buffer = bytearray()
    while True:
        try:
            line = read_line(_CHANNEL, buffer)
        except OSError:
            line = None
        if line is None:
            os._exit(0)
        try:
            request = json.loads(line)
        except ValueError:
            continue
        if isinstance(request, dict):
            _reply(_answer(namespace, request))

_serve()
`;

/**
 * The checker side: runs the test statements, fetching names from the program over fd 3, and
 * reports each verdict as an `R` line. Model code never runs here (only `ast` reads the program,
 * in the optional trusted `prepare` step).
 */
const CHECKER = String.raw`
import ast, builtins, importlib, json, os, select, signal, sys, time
${CODEC}
_CHANNEL = 3
_GRACE_S = __GRACE_SECONDS__
with open("checker.json", encoding="utf-8") as _f:
    _job = json.load(_f)
_PER_TEST_S = _job["perTestSeconds"]
_PROGRAM_NAMES = set(_job["programNames"])

class _TestTimeout(BaseException):
    pass

class _NoResult(BaseException):
    """The program cannot answer (it ended, or stopped answering): the statement has no result."""

class CandidateError(Exception):
    """An exception of the program's that is not re-raised as itself (see _RERAISE)."""

# Exceptions a test may legitimately expect from the function under test, re-raised as themselves.
# Everything else (StopIteration, which would silently end a map() or a for loop early;
# SystemExit, KeyboardInterrupt, GeneratorExit; the program's own classes) becomes CandidateError.
_RERAISE = {name: getattr(builtins, name) for name in (
    "ArithmeticError", "AssertionError", "AttributeError", "EOFError", "FloatingPointError",
    "IndexError", "KeyError", "LookupError", "MemoryError", "NameError", "NotImplementedError",
    "OSError", "OverflowError", "RecursionError", "RuntimeError", "TypeError", "UnboundLocalError",
    "ValueError", "ZeroDivisionError")}

def _send(kind, message):
    write_all(_CHANNEL, (kind + " " + json.dumps(message) + "\n").encode("utf-8", "surrogatepass"))

_buffer = bytearray()
_waiting = None  # id of a call the program has not answered yet
_gone = None     # why the program can no longer answer, once it cannot
_deadline = 0.0

def _await(ident, timeout=None):
    """The program's reply to request ident; None if timeout (seconds) passes first."""
    global _gone, _waiting
    limit = None if timeout is None else time.monotonic() + timeout
    while True:
        if limit is not None and b"\n" not in _buffer:
            ready, _, _ = select.select([_CHANNEL], [], [], max(0.0, limit - time.monotonic()))
            if not ready:
                return None
        line = read_line(_CHANNEL, _buffer)
        if line is None:
            _gone = "the checker lost its channel"
            raise _NoResult(_gone)
        kind, _, body = line.partition(b" ")
        if kind == b"N":
            _gone = "the program ended: %s" % json.loads(body).get("gone", "?")
            raise _NoResult(_gone)
        if kind != b"P":
            continue
        try:
            reply = json.loads(body)
        except ValueError:
            continue  # garbage the program wrote on its channel
        if isinstance(reply, dict) and reply.get("id") == ident:
            _waiting = None
            return reply

def _request(message):
    global _waiting
    if _gone is not None:
        raise _NoResult(_gone)
    # Unguessable, so a line the program wrote before it read this request cannot answer it
    # (a flood of answer-looking lines written in advance is garbage, whenever it arrives).
    ident = os.urandom(8).hex()
    message["id"] = ident
    _waiting = ident
    # The id also goes in front, where the relay reads it without parsing the arguments.
    write_all(_CHANNEL, ("C %s %s\n" % (ident, json.dumps(message))).encode("utf-8", "surrogatepass"))
    return _await(ident)

def _after_timeout():
    """A statement timed out while a call was out: the program gets a grace to answer, or is gone."""
    global _gone
    if _waiting is None or _gone is not None:
        return
    try:
        if _await(_waiting, _GRACE_S) is not None:
            return
    except _NoResult:
        return
    _gone = "the program stopped answering"
    _send("K", {})

def _unpack(reply, what):
    if "value" in reply:
        try:
            return decode(reply["value"])
        except NotPlainData as error:
            raise TypeError("%s: the program sent %s" % (what, error))
    if reply.get("timeout") is True:
        raise _TestTimeout()
    if reply.get("missing") is True:
        raise NameError("name %r is not defined by the program" % what)
    if "unplain" in reply:
        raise TypeError("%s returned %s (only None, bool, int, float, complex, str, bytes, list, tuple, "
                        "dict and set cross from the program)" % (what, str(reply["unplain"])[:200]))
    raised = reply.get("raised")
    if isinstance(raised, list) and len(raised) == 2 and all(isinstance(x, str) for x in raised):
        kind = _RERAISE.get(raised[0])
        if kind is not None:
            raise kind(raised[1])
        raise CandidateError("%s: %s" % (raised[0][:100], raised[1]))
    raise TypeError("%s: the program sent a malformed reply" % what)

class _Remote:
    """A function of the program: calls go over the channel, arguments and results as plain data."""
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        try:
            message = {"op": "call", "name": self._name, "args": [encode(a) for a in args],
                       "kwargs": [[k, encode(v)] for k, v in kwargs.items()],
                       "timeout": max(0.001, _deadline - time.monotonic())}
        except NotPlainData as error:
            raise TypeError("cannot pass %s to the program's %s" % (error, self._name))
        return _unpack(_request(message), self._name)

    def __repr__(self):
        return "<function %s of the program under test>" % self._name

_known_missing = set()

def _bind_free_names(tree, namespace):
    """Fetch from the program each name the statement reads that the checker does not define."""
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)})
    for name in names:
        if name in namespace or name in _known_missing:
            continue
        # Builtins stay the checker's own: a program that defines abs() or all() does not change them.
        if name in builtins.__dict__ and name not in _PROGRAM_NAMES:
            continue
        reply = _request({"op": "get", "name": name})
        module = reply.get("module")
        if reply.get("callable") is True:
            namespace[name] = _Remote(name)
        elif module == name and name in sys.stdlib_module_names:
            # A test that uses a module the program imported (sys.getsizeof, math.isclose) gets the
            # checker's own import of that standard-library module: never code the program wrote,
            # and only under its own name (no \`import unittest.mock as math\` swaps).
            namespace[name] = importlib.import_module(name)
        elif "value" in reply:
            namespace[name] = _unpack(reply, name)
        else:
            _known_missing.add(name)

def _on_alarm(signum, frame):
    raise _TestTimeout()

def _main():
    global _deadline
    prepared = None
    if _job.get("prepare") is not None:
        scope = {"__name__": "prepare"}
        exec(compile(_job["prepare"], "prepare", "exec"), scope)
        tests, prepared = list(scope["tests"]), scope.get("prepared")
    else:
        tests = _job["tests"]
    _send("A", {"count": len(tests), "prepared": prepared})
    # The codec and the blank, for statements that carry data of their own (replays of recorded calls).
    namespace = {"__name__": "tests", "__builtins__": builtins, "_troupe_encode": encode, "_troupe_decode": decode,
                 "_troupe_blank": blank}
    signal.signal(signal.SIGALRM, _on_alarm)
    for index, test in enumerate(tests):
        passed, reason = False, ""
        try:
            _deadline = time.monotonic() + _PER_TEST_S
            signal.setitimer(signal.ITIMER_REAL, _PER_TEST_S)
            try:
                tree = ast.parse(test, "test_%d" % index)
                _bind_free_names(tree, namespace)
                exec(compile(tree, "test_%d" % index, "exec"), namespace)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            passed = True
        except _TestTimeout:
            reason = "timeout"
            _after_timeout()
        except _NoResult as error:
            reason = "no result (%s)" % error
        except AssertionError as error:
            reason = "AssertionError " + str(error)
        except BaseException as error:
            try:
                reason = type(error).__name__ + " " + str(error)
            except BaseException:
                reason = type(error).__name__
        _send("R", {"index": index, "passed": passed, "reason": reason.replace("\n", " ").strip()[:500]})
    if _job.get("collect") is not None:
        try:
            signal.setitimer(signal.ITIMER_REAL, _PER_TEST_S)
            try:
                _send("D", {"value": eval(_job["collect"], namespace)})
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as error:
            _send("D", {"error": type(error).__name__})
    # We do not close the channel first: the relay, still writing to us, would get EPIPE and drop
    # our last lines unread. "E" tells it we are done; it stops writing and closes, we exit.
    _send("E", {})
    try:
        while os.read(_CHANNEL, 1 << 16):
            pass
    except OSError:
        pass

_main()
`;

/** Seconds a program gets, after its statement timed out, to answer the call it was working on. */
const GRACE_SECONDS = 0.5;
/**
 * Most bytes the program may write on its channel in one run, replies and garbage together (a
 * reply of plain data for a test is a few KB). Past it, the program floods: it is killed, and every
 * statement that still needs it fails with `no result (the program ended: killed: it wrote more
 * than 4 MiB on its channel)`.
 */
export const MAX_PROGRAM_CHANNEL_BYTES = 4 * 1024 * 1024;
const FLOODED = `killed: it wrote more than ${MAX_PROGRAM_CHANNEL_BYTES / 1024 / 1024} MiB on its channel`;
/** Most bytes the checker may send in one run (its requests carry the tests' arguments). */
const MAX_CHECKER_CHANNEL_BYTES = 256 * 1024 * 1024;

const identifier = z.string().regex(/^[A-Za-z_]\w*$/, "must be a Python identifier");

export const PythonTestsRequestSchema = z
  .object({
    code: z.string({ error: "code must be a string" }),
    tests: z.array(z.string().min(1, "each test must be a non-empty statement")).readonly().optional(),
    prepare: z.string().optional(),
    files: z.record(z.string(), z.string()).optional(),
    programNames: z.array(identifier).readonly().optional(),
    timeoutMs: z.number().int().positive("timeoutMs must be a positive integer").optional(),
    perTestTimeoutMs: z.number().int().positive("perTestTimeoutMs must be a positive integer").optional(),
    asMain: z.boolean().optional(),
    collect: z.string().min(1, "collect must be a non-empty Python expression").optional(),
    calleeMode: z.enum(["real", "blank"], { error: "calleeMode must be 'real' or 'blank'" }).optional(),
    limits: z.record(z.string(), z.number()).optional(),
  })
  .refine((r) => (r.tests === undefined) !== (r.prepare === undefined), {
    message: "give exactly one of tests and prepare",
  });

export interface PythonTestsRequest {
  readonly code: string;
  /**
   * Python statements (asserts, setup) run in order in the checker's namespace. Names they read
   * that the checker lacks are taken from the program: callables as forwarded functions, other
   * values if they are plain data. Builtins stay the checker's own unless named in `programNames`.
   */
  readonly tests?: readonly string[];
  /**
   * Instead of `tests`: trusted Python run first in the checker (never in the program's sandbox),
   * with `files` in its working directory. It must set `tests` (a list of statements) and may set
   * `prepared` (anything JSON), returned as `report.prepared`. Lets a caller split tests with
   * `ast` without a sandbox run of its own.
   */
  readonly prepare?: string;
  /** Files for `prepare` in the checker's working directory (the program never sees them). */
  readonly files?: Readonly<Record<string, string>>;
  /** Names always taken from the program, even when they shadow a builtin (the function under test). */
  readonly programNames?: readonly string[];
  /** Wall clock for the whole run. Default 10 000 ms. */
  readonly timeoutMs?: number;
  /** Wall clock of one statement, calls to the program included. Default: `timeoutMs`. */
  readonly perTestTimeoutMs?: number;
  /** Run the code with `__name__ == "__main__"` (its main block runs, with empty stdin). Default false. */
  readonly asMain?: boolean;
  /**
   * A trusted Python expression evaluated in the checker's test namespace after the last statement
   * (with one statement's time limit); its value, which must be JSON, is returned as
   * `report.collected`. For callers whose statements record something (the coding harness's call
   * recorder): only meaningful when the statements are the caller's own.
   */
  readonly collect?: string;
  /**
   * A counterfactual run: the program defines `_troupe_callee` and `_troupe_callee_log` (see
   * `CALLEE_HOOK`), through which the caller's rewritten callee runs, returning its real result
   * (`real`) or a blank of the same type (`blank`).
   */
  readonly calleeMode?: "real" | "blank";
  /** Limits of each of the two sandboxes. */
  readonly limits?: Partial<SandboxLimits>;
}

export interface TestOutcome {
  readonly index: number;
  readonly passed: boolean;
  /** Why it failed: `AssertionError ...`, `NameError ...`, `timeout`, or `no result (<why>)`. */
  readonly reason: string;
}

export interface PythonTestsReport {
  readonly passed: number;
  readonly total: number;
  /** passed / total (1 when there are no tests). */
  readonly fraction: number;
  readonly tests: readonly TestOutcome[];
  /** The program's sandbox run: its status, and what it printed (stdout, stderr). */
  readonly run: RunResult;
  /** The checker's sandbox run (stdout holds what the test statements printed). */
  readonly checker: RunResult;
  /** What `prepare` set as `prepared`; undefined without `prepare` or when the checker failed first. */
  readonly prepared?: unknown;
  /** The value of `collect` (JSON); undefined without `collect` or when it failed or was not reached. */
  readonly collected?: unknown;
}

const DEFAULT_TIMEOUT_MS = 10_000;

const VerdictSchema = z.object({ index: z.number().int().min(0), passed: z.boolean(), reason: z.string() });
const AnnounceSchema = z.object({ count: z.number().int().min(0), prepared: z.unknown() });

/**
 * Splits a byte stream into lines. The first `maxBytes` bytes are read, exactly (chunk boundaries
 * vary from run to run, the cut must not); then `tooMuch` is called once and the rest is dropped:
 * whatever we read we hold in memory, so a side that floods must end.
 */
function lineReader(
  maxBytes: number,
  onLine: (line: string) => void,
  tooMuch: () => void,
): (chunk: Buffer) => void {
  const decoder = new StringDecoder("utf8");
  let parts: string[] = [];
  let room = maxBytes;
  return (chunk) => {
    if (room < 0) return;
    const over = chunk.length > room;
    let text = decoder.write(over ? chunk.subarray(0, room) : chunk);
    room = over ? -1 : room - chunk.length;
    // Only the new text is searched for newlines, so a long line costs linear time.
    let end = text.indexOf("\n");
    while (end >= 0) {
      parts.push(text.slice(0, end));
      onLine(parts.join(""));
      parts = [];
      text = text.slice(end + 1);
      end = text.indexOf("\n");
    }
    parts.push(text);
    if (over) {
      parts = [];
      tooMuch();
    }
  };
}

/** JSON.parse that yields undefined (which the schemas reject) instead of throwing. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

interface Conversation {
  count: number | null;
  prepared?: unknown;
  collected?: unknown;
  readonly verdicts: Map<number, TestOutcome>;
}

/**
 * Relays between the checker and the program and collects the checker's verdicts.
 *
 * The checker's lines must all be read, whatever the program does. A write to a socket whose
 * process has exited fails with EPIPE and Node then destroys the socket, dropping what it had not
 * read yet: the checker's last verdicts (once, with a flood keeping us busy, all of them and its
 * `A` line). So we only ever write to the checker while it waits for us: the reply to the request
 * it has out (the program's other lines are dropped here), or `N` when the program ends before the
 * wall limit. The checker ends with `E` and then reads until we close its channel; after `E` we
 * write nothing more.
 */
async function relay(checker: LiveRun, program: LiveRun): Promise<Conversation> {
  const state: Conversation = { count: null, verdicts: new Map() };
  let waitingFor: string | null = null; // id of the checker's request the program has not answered
  let checkerEnded = false;
  let flooded = false;
  const toChecker = (line: string) => {
    if (!checkerEnded) checker.send(line);
  };
  program.onData(
    lineReader(
      MAX_PROGRAM_CHANNEL_BYTES,
      (line) => {
        if (waitingFor === null || !line.includes(waitingFor)) return; // cheap test first: floods come here
        const reply = parseJson(line);
        if (typeof reply === "object" && reply !== null && (reply as { id?: unknown }).id === waitingFor) {
          waitingFor = null;
          toChecker(`P ${line}\n`);
        }
      },
      () => {
        flooded = true;
        program.kill();
      },
    ),
  );
  checker.onData(
    lineReader(
      MAX_CHECKER_CHANNEL_BYTES,
      (line) => {
        const space = line.indexOf(" ");
        const kind = space < 0 ? line : line.slice(0, space);
        const body = space < 0 ? "" : line.slice(space + 1);
        if (kind === "C") {
          const idEnd = body.indexOf(" ");
          waitingFor = body.slice(0, idEnd);
          program.send(`${body.slice(idEnd + 1)}\n`);
        } else if (kind === "K") {
          waitingFor = null;
          program.kill();
        } else if (kind === "R") {
          const verdict = VerdictSchema.safeParse(parseJson(body));
          if (verdict.success && !state.verdicts.has(verdict.data.index))
            state.verdicts.set(verdict.data.index, verdict.data);
        } else if (kind === "A" && state.count === null) {
          const announce = AnnounceSchema.safeParse(parseJson(body));
          if (announce.success) {
            state.count = announce.data.count;
            state.prepared = announce.data.prepared;
          }
        } else if (kind === "D" && !("collected" in state)) {
          const data = parseJson(body);
          if (typeof data === "object" && data !== null && "value" in data) state.collected = data.value;
        } else if (kind === "E") {
          checkerEnded = true;
          checker.end();
        }
      },
      () => checker.kill(),
    ),
  );
  void program.done.then((result) => {
    // At the wall limit the checker is being killed too: nothing to tell it, and a write could fail.
    if (result.status !== "timeout")
      toChecker(`N ${JSON.stringify({ gone: flooded ? FLOODED : result.status })}\n`);
  });
  await checker.done;
  return state;
}

export async function runPythonWithTests(
  runner: CodeRunner,
  request: PythonTestsRequest,
): Promise<PythonTestsReport> {
  PythonTestsRequestSchema.parse(request);
  if (!isConnectedRunner(runner))
    throw new Error(
      "runPythonWithTests: the runner cannot start connected runs (runConnected); use createSandbox() from @troupe/sandbox",
    );
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const limits = {
    wallMs: timeoutMs,
    cpuSeconds: Math.max(1, Math.ceil(timeoutMs / 1000)),
    ...request.limits,
  };
  const job = {
    perTestSeconds: (request.perTestTimeoutMs ?? timeoutMs) / 1000,
    programNames: request.programNames ?? [],
    tests: request.tests ?? null,
    prepare: request.prepare ?? null,
    collect: request.collect ?? null,
  };
  const checkerFiles = { ...request.files, "checker.json": JSON.stringify(job) };
  const { value, results } = await runner.runConnected(
    [
      {
        language: "python",
        code: CHECKER.replace("__GRACE_SECONDS__", String(GRACE_SECONDS)),
        files: checkerFiles,
        limits,
      },
      {
        language: "python",
        code: PROGRAM_SERVER.replace("__AS_MAIN__", request.asMain === true ? "True" : "False").replace(
          "__CALLEE_MODE__",
          request.calleeMode === undefined ? "None" : JSON.stringify(request.calleeMode),
        ),
        files: { "solution.py": request.code },
        limits,
      },
    ],
    ([checker, program]) => relay(checker!, program!),
  );
  const [checkerRun, programRun] = results as [RunResult, RunResult];
  // The count comes from the trusted side only: the request, or the checker's `prepare`.
  const total = request.tests?.length ?? value.count ?? 0;
  const missing: RunStatus = checkerRun.status === "ok" ? programRun.status : checkerRun.status;
  const tests = Array.from(
    { length: total },
    (_, index) => value.verdicts.get(index) ?? { index, passed: false, reason: `no result (${missing})` },
  );
  const passed = tests.filter((t) => t.passed).length;
  return {
    passed,
    total,
    fraction: total === 0 ? 1 : passed / total,
    tests,
    run: programRun,
    checker: checkerRun,
    ...(value.count !== null && request.prepare !== undefined ? { prepared: value.prepared } : {}),
    ...(value.collected !== undefined ? { collected: value.collected } : {}),
  };
}
