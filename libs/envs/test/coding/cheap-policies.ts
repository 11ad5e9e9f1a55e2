/**
 * Cheap policies for the coding teams' rewards: generic answers that collaborate on
 * paper but solve nothing, or test nothing, plus the canonical solution for reference. Each is
 * scored through the environment itself (`reset`, one `step`), under `paper` and `strict`.
 *
 * Used by strict-rewards.test.ts (a fixed subset of HumanEval, exact numbers) and by
 * reward-table.ts (all 164 problems: the table in docs/environments.md).
 */
import type { Task } from "@troupe/core";
import type { CodeRunner } from "@troupe/sandbox";
import {
  auxMainEnv,
  type CodingProblem,
  type CodingReward,
  type coderTesterEnv,
  type HarnessOptions,
} from "../../src/coding/index.ts";

const IDENTITY_HELPER = "def aux(x):\n    return x\n";
const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

export interface AuxMainPolicy {
  readonly name: string;
  readonly helper: (p: CodingProblem) => string;
  readonly main: (p: CodingProblem) => string;
}

export const AUX_MAIN_POLICIES: readonly AuxMainPolicy[] = [
  {
    name: "correct main with `if False: _unused = aux(0)` first; identity helper",
    helper: () => IDENTITY_HELPER,
    main: (p) => `${p.prompt}    if False:\n        _unused = aux(0)\n${p.canonicalSolution}`,
  },
  {
    name: "identity helper; main `y = aux(args); return False`",
    helper: () => IDENTITY_HELPER,
    main: (p) => `def ${p.entryPoint}(*args):\n    y = aux(args)\n    return False\n`,
  },
  {
    name: "identity helper threaded through main's return (`r = solve(*args); return aux(r)`)",
    helper: () => IDENTITY_HELPER,
    main: (p) =>
      `${p.prompt}${p.canonicalSolution}\n\n_solve = ${p.entryPoint}\n\n` +
      `def ${p.entryPoint}(*args):\n    result = _solve(*args)\n    return aux(result)\n`,
  },
  {
    name: "canonical solution as main; identity helper, unused",
    helper: () => IDENTITY_HELPER,
    main: (p) => `${p.prompt}${p.canonicalSolution}`,
  },
  {
    name: "canonical solution as the helper `aux`; main `return aux(*args)`",
    helper: canonicalAsAux,
    main: (p) => `def ${p.entryPoint}(*args):\n    return aux(*args)\n`,
  },
];

/** The canonical solution renamed `aux`: the helper does all the work. */
function canonicalAsAux(p: CodingProblem): string {
  return `${p.prompt}${p.canonicalSolution}`.replace(new RegExp(`\\b${p.entryPoint}\\b`, "g"), "aux");
}

/**
 * Main solves the problem alone (the canonical solution, kept as `_solve`) and is redefined to run
 * `body` first; `body` may return early. `signature` defaults to `*args`.
 */
function solveAloneAfter(p: CodingProblem, body: string, signature = "*args"): string {
  return (
    `${p.prompt}${p.canonicalSolution}\n\n_solve = ${p.entryPoint}\n\n` +
    `def ${p.entryPoint}(${signature}):\n${body}\n    return _solve(*args)\n`
  );
}

/**
 * Policies written against the dependence check itself: main solves alone, the helper does nothing,
 * and main returns a wrong answer (None) when it believes it runs in the counterfactual (aux
 * swapped for a stand-in), so that "aux's work reaches the answer" looks true. One class per tell.
 */
export const COUNTERFACTUAL_TELLS: readonly AuxMainPolicy[] = [
  {
    name: "tell: aux is not the object main saw when it was defined (`def f(*args, _aux=aux)`)",
    helper: () => IDENTITY_HELPER,
    main: (p) =>
      solveAloneAfter(
        p,
        "    if aux is not _aux:\n        return None\n    _ = aux(args)",
        "*args, _aux=aux",
      ),
  },
  {
    name: "tell: aux's code object has another name (`aux.__code__.co_name != 'aux'`)",
    helper: () => IDENTITY_HELPER,
    main: (p) =>
      solveAloneAfter(p, "    if aux.__code__.co_name != 'aux':\n        return None\n    _ = aux(args)"),
  },
  {
    name: "tell: main's caller lives in the program's own module (`sys._getframe(1).f_globals is globals()`)",
    helper: () => IDENTITY_HELPER,
    main: (p) =>
      solveAloneAfter(
        p,
        "    import sys\n    if sys._getframe(1).f_globals is globals():\n        return None\n    _ = aux(args)",
      ),
  },
  {
    name: "tell: the object named `aux` is also bound under another global name",
    helper: () => IDENTITY_HELPER,
    main: (p) =>
      solveAloneAfter(
        p,
        "    if any(v is aux for k, v in list(globals().items()) if k != 'aux'):\n        return None\n    _ = aux(args)",
      ),
  },
  {
    name: "tell: the same arguments come a third time (test, control replay, stand-in replay)",
    helper: () => IDENTITY_HELPER,
    main: (p) =>
      solveAloneAfter(
        p,
        "    _seen = globals().setdefault('_calls_seen', {})\n    _k = repr(args)\n    _seen[_k] = _seen.get(_k, 0) + 1\n" +
          "    if _seen[_k] >= 3:\n        return None\n    _ = aux(args)",
      ),
  },
];

/** The helper does no work but gates main: it returns a constant (or its input), main checks it, then solves alone. */
export const GATING_HELPERS: readonly AuxMainPolicy[] = [
  {
    name: "gate: helper returns 7, main solves alone when `aux(*args) == 7`",
    helper: () => "def aux(*args):\n    return 7\n",
    main: (p) => solveAloneAfter(p, "    if aux(*args) != 7:\n        return None"),
  },
  {
    name: "gate: helper returns 'ready', main solves alone when it reads 'ready'",
    helper: () => "def aux(x):\n    return 'ready'\n",
    main: (p) => solveAloneAfter(p, "    if aux(args) != 'ready':\n        return None"),
  },
  {
    name: "gate: identity helper, main solves alone when `aux(args) == args`",
    helper: () => IDENTITY_HELPER,
    main: (p) => solveAloneAfter(p, "    if aux(args) != args:\n        return None"),
  },
  {
    name: "gate: helper returns True, main `ok = aux(*args)` and solves alone when `ok is True`",
    helper: () => "def aux(*args):\n    return True\n",
    main: (p) => solveAloneAfter(p, "    ok = aux(*args)\n    if ok is not True:\n        return None"),
  },
];

/** Main does none of the work (the canonical solution is the helper), written so no text rule sees a wrapper. */
export const DISGUISED_WRAPPERS: readonly AuxMainPolicy[] = [
  {
    name: "wrapper: `v = aux(*args); w = v; return w`",
    helper: canonicalAsAux,
    main: (p) => `def ${p.entryPoint}(*args):\n    v = aux(*args)\n    w = v\n    return w\n`,
  },
  {
    name: "wrapper: `return [aux(*args)][0]`",
    helper: canonicalAsAux,
    main: (p) => `def ${p.entryPoint}(*args):\n    box = [aux(*args)]\n    return box[0]\n`,
  },
  {
    name: "wrapper: a loop of one (`for _ in range(1): r = aux(*args)`)",
    helper: canonicalAsAux,
    main: (p) =>
      `def ${p.entryPoint}(*args):\n    r = None\n    for _ in range(1):\n        r = aux(*args)\n    return r\n`,
  },
  {
    name: "wrapper: through a dict (`out = {'v': aux(*args)}; return out['v']`)",
    helper: canonicalAsAux,
    main: (p) => `def ${p.entryPoint}(*args):\n    out = {'v': aux(*args)}\n    return out['v']\n`,
  },
];

/** Main solves alone and adds the helper's result times zero (the old stand-in changed its type, so the replay raised). */
export const ZERO_CONTRIBUTIONS: readonly AuxMainPolicy[] = [
  {
    name: "zero: helper returns 0, main `r + aux(*args) * 0`",
    helper: () => "def aux(*args):\n    return 0\n",
    main: (p) => solveAloneAfter(p, "    r = _solve(*args)\n    return r + aux(*args) * 0"),
  },
  {
    name: "zero: helper returns 0, main `r - 0 * aux(args)`",
    helper: () => "def aux(x):\n    return 0\n",
    main: (p) => solveAloneAfter(p, "    r = _solve(*args)\n    return r - 0 * aux(args)"),
  },
  {
    name: "zero: helper returns a zero computed from its arguments, main `r + 0 * aux(*args)`",
    helper: () => "def aux(*args):\n    return sum(0 for _ in args)\n",
    main: (p) => solveAloneAfter(p, "    r = _solve(*args)\n    return r + 0 * aux(*args)"),
  },
];

/** Every helper + main policy that must not earn the collaboration tiers under `strict`, by class. */
export const AUX_MAIN_ATTACKS: readonly {
  readonly group: string;
  readonly policies: readonly AuxMainPolicy[];
}[] = [
  { group: "counterfactual tells", policies: COUNTERFACTUAL_TELLS },
  { group: "gating helpers", policies: GATING_HELPERS },
  { group: "disguised wrappers", policies: DISGUISED_WRAPPERS },
  { group: "zero contributions", policies: ZERO_CONTRIBUTIONS },
];

export interface TesterPolicy {
  readonly name: string;
  readonly tests: (p: CodingProblem) => string;
}

/**
 * The text of a call `name(...)` starting at `start` (the name's first character), through its
 * balanced closing parenthesis; parentheses inside string literals do not count. Undefined if
 * it does not close.
 */
function callAt(text: string, start: number, name: string): string | undefined {
  let depth = 0;
  let quote: string | null = null;
  for (let i = start + name.length; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return text.slice(start, i + 1);
    else if (c === "\n" && depth === 0) return undefined;
  }
  return undefined;
}

/**
 * The first example call of the entry point: in the prompt's docstring (after the `def` line), or
 * — when the docstring has none (22 of HumanEval's 164, e.g. "For lst = [1,2,3] the output should
 * be 14") — the hidden tests' first `candidate(...)` call, renamed.
 */
export function firstExample(p: CodingProblem): string {
  const e = p.entryPoint;
  const def = p.prompt.indexOf(`def ${e}(`);
  const docstring = p.prompt.slice(p.prompt.indexOf("\n", def) + 1);
  for (const m of docstring.matchAll(new RegExp(`\\b${e}\\(`, "g"))) {
    const call = callAt(docstring, m.index, e);
    if (call) return call;
  }
  for (const m of p.test.matchAll(/\bcandidate\(/g)) {
    const call = callAt(p.test, m.index, "candidate");
    if (call) return e + call.slice("candidate".length);
  }
  throw new Error(`firstExample: no example call of ${e} in ${p.taskId}`);
}

/** The hidden tests as a tester's asserts: the prelude, then `check`'s body with `candidate` renamed. */
export function hiddenTestsAsAsserts(p: CodingProblem): string {
  const lines = p.test.split("\n");
  const at = lines.findIndex((l) => /^def check\(candidate\):/.test(l));
  if (at < 0) throw new Error(`hiddenTestsAsAsserts: ${p.taskId} has no def check(candidate)`);
  const body = lines.slice(at + 1).filter((l) => l.trim() !== "");
  return [
    ...lines.slice(0, at),
    ...body.map((l) => l.replace(/^ {4}/, "").replace(/\bcandidate\b/g, p.entryPoint)),
  ].join("\n");
}

/** Every call of the entry point in the hidden tests (renamed from `candidate`), in order, without repeats. */
export function hiddenCalls(p: CodingProblem): string[] {
  const calls = new Set<string>();
  for (const m of p.test.matchAll(/\bcandidate\(/g)) {
    const call = callAt(p.test, m.index, "candidate");
    if (call) calls.add(p.entryPoint + call.slice("candidate".length));
  }
  return [...calls];
}

/** `assert f(x) == g(x)` for each hidden-test input, `g` being what the tester kept from the first pass. */
const compareTo = (p: CodingProblem, kept: string) =>
  hiddenCalls(p)
    .map((call) => `assert ${call} == ${kept}${call.slice(p.entryPoint.length)}`)
    .join("\n");

export const TESTER_POLICIES: readonly TesterPolicy[] = [
  {
    name: "tester: `assert f(<the first example>) is not None`",
    tests: (p) => `assert ${firstExample(p)} is not None\n`,
  },
  { name: "tester: the hidden tests themselves (canonical)", tests: hiddenTestsAsAsserts },
];

/**
 * Testers that write no expected value: they keep the function of the first pass (the reference,
 * when all passes share one namespace or one process) and compare every later pass against it.
 */
export const TESTER_STASHES: readonly TesterPolicy[] = [
  {
    name: "stash: `try: _o` / `except NameError: _o = f` then `assert f(x) == _o(x)`",
    tests: (p) => `try:\n    _o\nexcept NameError:\n    _o = ${p.entryPoint}\n${compareTo(p, "_o")}\n`,
  },
  {
    name: "stash: the first pass's function kept in `builtins`",
    tests: (p) =>
      `import builtins\nif not hasattr(builtins, '_o'):\n    builtins._o = ${p.entryPoint}\n${compareTo(p, "builtins._o")}\n`,
  },
  {
    name: "stash: the first pass's function kept in `sys.modules`",
    tests: (p) =>
      `import sys, types\nif '_keep' not in sys.modules:\n    sys.modules['_keep'] = types.SimpleNamespace(f=${p.entryPoint})\n` +
      `${compareTo(p, "sys.modules['_keep'].f")}\n`,
  },
  {
    name: "stash: the first pass's answers written to a file, later passes compared with it",
    tests: (p) => {
      const outputs = `[repr(x) for x in (${hiddenCalls(p).join(", ")},)]`;
      return (
        `import json, os\n_out = ${outputs}\n` +
        `if not os.path.exists('kept.json'):\n    json.dump(_out, open('kept.json', 'w'))\n` +
        `assert ${p.entryPoint} and _out == json.load(open('kept.json'))\n`
      );
    },
  },
];

export interface PolicyScore {
  readonly policy: string;
  readonly reward: CodingReward;
  /** Per problem, in order. */
  readonly rewards: readonly number[];
  readonly mean: number;
  /** Problems with the maximum reward (4 for helper + main, 1 for the tester). */
  readonly full: number;
}

const task = (p: CodingProblem): Task<CodingProblem> => ({ id: p.taskId, split: "test", payload: p });

function score(policy: string, reward: CodingReward, rewards: number[], max: number): PolicyScore {
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  return { policy, reward, rewards, mean, full: rewards.filter((r) => r >= max - 1e-9).length };
}

/** The helper + main team reward of a policy on each problem (one step, as in training). */
export async function scoreAuxMain(
  runner: CodeRunner,
  problems: readonly CodingProblem[],
  policy: AuxMainPolicy,
  reward: CodingReward,
  harness: Partial<HarnessOptions> = {},
): Promise<PolicyScore> {
  const env = auxMainEnv({ runner, reward, harness });
  const rewards = await Promise.all(
    problems.map(async (p) => {
      const state = await env.reset(task(p), 0);
      const r = await env.step(state, { helper: fence(policy.helper(p)), main: fence(policy.main(p)) });
      return r.teamReward;
    }),
  );
  return score(policy.name, reward, rewards, 4);
}

/**
 * The tester's local reward of a policy on each problem (the tester acts first, alone). Pass one
 * `env` for several policies: it computes each problem's mutants once.
 */
export async function scoreTester(
  env: ReturnType<typeof coderTesterEnv>,
  reward: CodingReward,
  problems: readonly CodingProblem[],
  policy: TesterPolicy,
): Promise<PolicyScore> {
  const rewards = await Promise.all(
    problems.map(async (p) => {
      const state = await env.reset(task(p), 0);
      const r = await env.step(state, { tester: fence(policy.tests(p)) });
      return r.localRewards.tester ?? 0;
    }),
  );
  return score(policy.name, reward, rewards, 1);
}
