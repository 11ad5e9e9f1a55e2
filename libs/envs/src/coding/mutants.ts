/**
 * Wrong programs derived from a problem's reference solution, for the tester's `strict` reward: a
 * test that checks nothing rejects none of them, so it earns nothing.
 *
 * Each mutant is the reference's entry-point function with one change, made with Python's `ast`:
 * | kind             | change                                                                               |
 * |------------------|--------------------------------------------------------------------------------------|
 * | `stub`           | the body becomes `return None`                                                        |
 * | `constant`       | the body becomes `return <c>`: c = the zero value of the type the hidden tests expect, and their most frequent expected value (`False` is the answer to a third of HumanEval's asserts) |
 * | `off-by-one`     | an integer constant + 1, or `<` ↔ `<=` / `>` ↔ `>=` in a comparison                   |
 * | `dropped branch` | an `if` body (the `else` runs instead), an `else`, a conditional expression's true branch, or a comprehension's filter |
 * At most `MUTANT_LIMITS` of each operator, spread over the function (first, last, evenly between);
 * duplicates dropped. Then screening: every mutant runs against the problem's own hidden tests in
 * a harness run of its own (`variants`), and only those that fail at least one test and finish
 * every test in time are kept. A mutant the hidden tests cannot tell from the reference (`<` vs `<=` where no
 * test sits on the boundary) would punish a correct tester, and a mutant that hangs would only
 * cost time.
 *
 * The generator is our code on the dataset's reference (nothing a model wrote); it runs through
 * the runner like everything else. A problem's mutants are computed once per `mutantCache`.
 */
import { createHash } from "node:crypto";
import type { CodeRunner } from "@troupe/sandbox";
import { z } from "zod";
import type { CodingProblem } from "./dataset.ts";
import { defaultHarnessOptions, type HarnessOptions, runTests, type TestReport } from "./harness.ts";

/** How many mutants each operator may contribute (before screening). */
export const MUTANT_LIMITS = { constants: 2, integers: 2, comparisons: 2, branches: 3 } as const;

/** Wall clock of a screening run (one per problem; hanging mutants spend the per-test limit each). */
const SCREENING_WALL_MS = 30_000;

/** Names of the mutant functions in the program: `_troupe_mutant_0`, `_troupe_mutant_1`, … */
export const MUTANT_PREFIX = "_troupe_mutant_";

const MutantSchema = z.object({
  name: z.string().regex(/^[A-Za-z_]\w*$/),
  kind: z.enum(["stub", "constant", "off-by-one", "dropped branch"]),
  description: z.string(),
  /** The mutated function, renamed to `name` (recursive calls too). */
  source: z.string(),
});
export type Mutant = z.infer<typeof MutantSchema>;

const GeneratorOutputSchema = z.object({ mutants: z.array(MutantSchema), error: z.string().nullable() });

export interface MutantSet {
  /** The reference program followed by every kept mutant: the tester's tests run against it. */
  readonly program: string;
  /** The kept mutants (non-equivalent, finishing in time), in generation order. */
  readonly mutants: readonly Mutant[];
  /** Generated mutants that screening dropped, and why. */
  readonly dropped: readonly { readonly mutant: Mutant; readonly why: string }[];
}

/** The reference program: the prompt completed by its canonical solution. */
export function referenceProgram(problem: CodingProblem): string {
  return `${problem.prompt}${problem.canonicalSolution}\n`;
}

/** `referenceProgram` followed by the mutants' definitions. */
export function mutantProgram(problem: CodingProblem, mutants: readonly Mutant[]): string {
  return `${referenceProgram(problem)}\n\n${mutants.map((m) => m.source).join("\n\n")}\n`;
}

/** Generates the mutants of a problem's reference (unscreened). Throws if the generator fails. */
export async function generateMutants(runner: CodeRunner, problem: CodingProblem): Promise<Mutant[]> {
  const job = {
    program: referenceProgram(problem),
    entryPoint: problem.entryPoint,
    tests: problem.test,
    prefix: MUTANT_PREFIX,
    limits: MUTANT_LIMITS,
  };
  const run = await runner.run({
    language: "python",
    code: GENERATOR_SOURCE,
    files: { "job.json": JSON.stringify(job) },
    limits: { wallMs: 20_000, cpuSeconds: 20 },
  });
  let output: unknown;
  try {
    output = JSON.parse(run.stdout);
  } catch {
    output = undefined;
  }
  const parsed = GeneratorOutputSchema.safeParse(output);
  if (run.status !== "ok" || !parsed.success) {
    const why = (run.stderr.trim().split("\n").at(-1) ?? "").slice(0, 300);
    throw new Error(
      `mutants: the generator failed on ${problem.taskId} (${run.status})${why ? `: ${why}` : ""}`,
    );
  }
  // A reference that does not parse or lacks the entry point has no mutants (the stub stays the
  // tester's only wrong program then: see the caller).
  return parsed.data.mutants;
}

/**
 * Limits of a screening run: the usual limit per test (a mutant that hangs is dropped), and room
 * for a pass over every test even when several of them time out.
 */
function screeningLimits(harness: Partial<HarnessOptions>): Partial<HarnessOptions> {
  return { ...harness, wallMs: Math.max(harness.wallMs ?? defaultHarnessOptions.wallMs, SCREENING_WALL_MS) };
}

/** Why screening drops a mutant, or undefined to keep it. */
function screeningVerdict(report: TestReport, index: number): string | undefined {
  const variant = report.variants?.[index];
  if (!variant || variant.error !== undefined) return variant?.error ?? "not run";
  if (variant.tests.some((t) => t.timedOut || t.noResult)) return "did not finish every hidden test in time";
  if (variant.total === 0 || variant.passed === variant.total) return "equivalent: passes every hidden test";
  return undefined;
}

/** Generates and screens the mutants of a problem's reference (one generator run, a harness run per mutant). */
export async function referenceMutants(
  runner: CodeRunner,
  problem: CodingProblem,
  harness: Partial<HarnessOptions> = {},
): Promise<MutantSet> {
  const generated = await generateMutants(runner, problem);
  if (generated.length === 0) return { program: referenceProgram(problem), mutants: [], dropped: [] };
  const report = await runTests(
    runner,
    {
      program: mutantProgram(problem, generated),
      tests: problem.test,
      style: "check",
      entryPoint: problem.entryPoint,
      trusted: problem.prompt,
      variants: generated.map((m) => m.name),
    },
    screeningLimits(harness),
  );
  const kept: Mutant[] = [];
  const dropped: { mutant: Mutant; why: string }[] = [];
  generated.forEach((mutant, i) => {
    const why = screeningVerdict(report, i);
    if (why === undefined) kept.push(mutant);
    else dropped.push({ mutant, why });
  });
  return { program: mutantProgram(problem, kept), mutants: kept, dropped };
}

/**
 * `referenceMutants`, computed once per problem (by content) and shared; a failed computation is
 * forgotten, so the next call tries again.
 */
export function mutantCache(
  runner: CodeRunner,
  harness: Partial<HarnessOptions> = {},
): (problem: CodingProblem) => Promise<MutantSet> {
  const cache = new Map<string, Promise<MutantSet>>();
  return (problem) => {
    const key = createHash("sha256")
      .update(JSON.stringify([problem.prompt, problem.canonicalSolution, problem.test, problem.entryPoint]))
      .digest("hex");
    let entry = cache.get(key);
    if (!entry) {
      entry = referenceMutants(runner, problem, harness);
      cache.set(key, entry);
      entry.catch(() => cache.delete(key));
    }
    return entry;
  };
}

/**
 * The generator (Python). Reads `job.json` (`program`, `entryPoint`, `tests`, `prefix`, `limits`)
 * and prints `{"mutants": [...], "error": null | why}`.
 */
export const GENERATOR_SOURCE = String.raw`
import ast, copy, json

job = json.load(open("job.json"))
ENTRY = job["entryPoint"]
LIMITS = job["limits"]
out = {"mutants": [], "error": None}

def is_subject_call(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("candidate", ENTRY)

def expected_values(tests):
    """Literal results the tests expect: candidate(...) == <literal>, candidate(...) - <literal>, assert [not] candidate(...)."""
    try:
        tree = ast.parse(tests)
    except (SyntaxError, ValueError):
        return []
    values = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            if is_subject_call(node.test):
                values.append(True)
            elif isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
                    and is_subject_call(node.test.operand):
                values.append(False)
        sides = None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.Is)):
            sides = (node.left, node.comparators[0])
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            sides = (node.left, node.right)
        for call, other in ((sides, sides[::-1]) if sides else ()):
            if is_subject_call(call):
                try:
                    value = ast.literal_eval(other)
                except Exception:
                    continue
                if value is not None:
                    values.append(value)
    return values

ZERO = {bool: False, int: 0, float: 0.0, str: "", list: [], tuple: (), dict: {}, set: set()}

def constants(tests):
    """The zero value of the most common expected type, and the most common expected value."""
    values = expected_values(tests)
    if not values:
        return []
    kinds = [type(v) for v in values]
    kind = max(set(kinds), key=lambda k: (kinds.count(k), k.__name__))
    same = [v for v in values if type(v) is kind]
    reprs = [repr(v) for v in same]
    modal = same[max(range(len(same)), key=lambda i: (reprs.count(reprs[i]), -i))]
    chosen = []
    for value in ([ZERO[kind]] if kind in ZERO else []) + [modal]:
        text = repr(value)
        try:
            round_trips = repr(ast.literal_eval(text)) == text
        except Exception:
            round_trips = False
        if round_trips and text not in [repr(c) for c in chosen]:
            chosen.append(value)
    return chosen

def without_docstring(fn):
    new = copy.deepcopy(fn)
    body = new.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        new.body = body[1:]
    return new

def position(node):
    at = node.target if isinstance(node, ast.comprehension) else node
    return (at.lineno, at.col_offset)

def nodes(fn, predicate):
    found = [n for stmt in fn.body for n in ast.walk(stmt) if predicate(n)]
    return sorted(found, key=position)

def spread(items, n):
    """At most n items: the first, the last and evenly between."""
    if len(items) <= n:
        return list(items)
    if n == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]

def with_body(fn, statements):
    new = copy.deepcopy(fn)
    new.body = statements
    return new

def replace_node(fn, target, make):
    """A copy of fn with the node target replaced by make(its copy): a node, or a list of statements."""
    index = list(ast.walk(fn)).index(target)
    new = copy.deepcopy(fn)
    node = list(ast.walk(new))[index]
    replacement = make(node)
    for parent in ast.walk(new):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, list) and any(v is node for v in value):
                i = next(i for i, v in enumerate(value) if v is node)
                value[i:i + 1] = replacement if isinstance(replacement, list) else [replacement]
                return new
            if value is node:
                setattr(parent, field, replacement)
                return new
    return new

def rename(fn, name):
    new = copy.deepcopy(fn)
    new.name = name
    for n in ast.walk(new):
        if isinstance(n, ast.Name) and n.id == ENTRY:
            n.id = name
    return new

FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}

def bump(c):
    c.value += 1
    return c

def drop_else(c):
    c.orelse = []
    return c

def drop_filter(c):
    c.ifs = []
    return c

def candidates(fn, tests):
    yield "stub", "return None", with_body(fn, [ast.Return(ast.Constant(None))])
    for value in constants(tests)[:LIMITS["constants"]]:
        body = [ast.Return(ast.parse(repr(value), mode="eval").body)]
        yield "constant", "return %r" % (value,), with_body(fn, body)
    ints = nodes(fn, lambda n: isinstance(n, ast.Constant) and type(n.value) is int)
    for n in spread(ints, LIMITS["integers"]):
        yield "off-by-one", "line %d: %d -> %d" % (n.lineno, n.value, n.value + 1), replace_node(fn, n, bump)
    compares = nodes(fn, lambda n: isinstance(n, ast.Compare) and any(type(op) in FLIP for op in n.ops))
    for n in spread(compares, LIMITS["comparisons"]):
        i = next(i for i, op in enumerate(n.ops) if type(op) in FLIP)
        old = type(n.ops[i])
        def flip(c, i=i):
            c.ops[i] = FLIP[type(c.ops[i])]()
            return c
        yield "off-by-one", "line %d: %s -> %s" % (n.lineno, SYMBOL[old], SYMBOL[FLIP[old]]), replace_node(fn, n, flip)
    branches = []
    for n in nodes(fn, lambda n: isinstance(n, (ast.If, ast.IfExp, ast.comprehension))):
        line = position(n)[0]
        if isinstance(n, ast.If):
            branches.append(("line %d: drop the if body" % line, n, lambda c: c.orelse or [ast.Pass()]))
            if n.orelse:
                branches.append(("line %d: drop the else" % line, n, drop_else))
        elif isinstance(n, ast.IfExp):
            branches.append(("line %d: drop the true branch of a conditional" % line, n, lambda c: c.orelse))
        elif n.ifs:
            branches.append(("line %d: drop a comprehension's filter" % line, n, drop_filter))
    for description, n, make in spread(branches, LIMITS["branches"]):
        yield "dropped branch", description, replace_node(fn, n, make)

def main():
    try:
        tree = ast.parse(job["program"])
    except (SyntaxError, ValueError) as e:
        out["error"] = "the reference does not parse: %s" % e
        return
    defs = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == ENTRY]
    if not defs:
        out["error"] = "the reference defines no %s" % ENTRY
        return
    fn = without_docstring(defs[-1])
    seen = {ast.unparse(fn)}
    for kind, description, mutant in candidates(fn, job["tests"]):
        ast.fix_missing_locations(mutant)
        try:
            source = ast.unparse(mutant)
            compile(source, "mutant", "exec")
        except Exception:
            continue
        if source in seen:
            continue
        seen.add(source)
        name = "%s%d" % (job["prefix"], len(out["mutants"]))
        out["mutants"].append({"name": name, "kind": kind, "description": description,
                               "source": ast.unparse(ast.fix_missing_locations(rename(mutant, name)))})

main()
print(json.dumps(out))
`;
